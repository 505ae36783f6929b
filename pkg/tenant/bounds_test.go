package tenant

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/webhook"
)

func TestCacheIsBoundedLeastRecentlyUsedFirst(t *testing.T) {
	var loads []string
	var mu sync.Mutex
	c := NewCache(func(_ context.Context, id string) (string, error) {
		mu.Lock()
		loads = append(loads, id)
		mu.Unlock()
		return "cfg-" + id, nil
	}, time.Hour, 0, nil, CacheOptions{MaxEntries: 2})
	ctx := context.Background()
	for _, id := range []string{"a", "b", "a", "c", "a", "b"} {
		if v, err := c.Get(ctx, id); v != "cfg-"+id || err != nil {
			t.Fatalf("Get(%q) = %q, %v", id, v, err)
		}
		if c.Len() > 2 {
			t.Fatalf("Len() = %d after Get(%q), want at most 2", c.Len(), id)
		}
	}
	// c evicted b (least recently used), b evicted c; a stayed cached.
	if got := strings.Join(loads, ","); got != "a,b,c,b" {
		t.Errorf("loads = %s, want a,b,c,b", got)
	}
}

func TestCacheLoadOutlivesACancelledCaller(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	var loadCtxErr atomic.Value
	c := NewCache(func(ctx context.Context, id string) (string, error) {
		calls.Add(1)
		<-release
		loadCtxErr.Store(fmt.Sprint(ctx.Err()))
		return "cfg", nil
	}, 0, 0, nil)
	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() { _, err := c.Get(first, "acme"); firstErr <- err }()
	waiter := make(chan string, 1)
	go func() {
		for c.Len() == 0 {
			time.Sleep(time.Millisecond)
		}
		v, err := c.Get(context.Background(), "acme")
		waiter <- fmt.Sprint(v, err)
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller's Get() = %v, want context.Canceled", err)
	}
	close(release)
	if got := <-waiter; got != "cfg<nil>" {
		t.Errorf("waiter's Get() = %s, want cfg<nil>: a cancelled caller must not fail the load", got)
	}
	if calls.Load() != 1 || loadCtxErr.Load() != "<nil>" {
		t.Errorf("loads = %d with context error %v, want 1 load whose context was not cancelled", calls.Load(), loadCtxErr.Load())
	}
}

func TestCacheRemembersInvalidConfigurationBriefly(t *testing.T) {
	now := time.Unix(1000, 0)
	var calls atomic.Int32
	c := NewCache(func(_ context.Context, id string) (string, error) {
		calls.Add(1)
		return "", fmt.Errorf("%w: tenant %q: providers.github.secrets[0]: empty secret", ErrInvalid, id)
	}, time.Minute, 10*time.Second, func() time.Time { return now })
	for i, adv := range []time.Duration{0, 9 * time.Second, 2 * time.Second} {
		now = now.Add(adv)
		if _, err := c.Get(context.Background(), "acme"); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Get() = %v, want ErrInvalid", err)
		}
		if want := []int32{1, 1, 2}[i]; calls.Load() != want {
			t.Errorf("after %d gets: %d loads, want %d", i+1, calls.Load(), want)
		}
	}
}

func TestDirectory(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	listed := []string{"acme"}
	var lists, loads atomic.Int32
	var listErr error
	cache := NewCache(func(_ context.Context, id string) (string, error) {
		loads.Add(1)
		return "cfg-" + id, nil
	}, time.Hour, 0, clock)
	d := NewDirectory(func(context.Context) ([]string, error) {
		lists.Add(1)
		return listed, listErr
	}, cache, time.Minute, clock)
	ctx := context.Background()

	steps := []struct {
		name      string
		advance   time.Duration
		listed    []string
		listErr   error
		id        string
		want      string
		wantErr   error
		lists     int32
		loads     int32
		cacheSize int
	}{
		{"first request lists", 0, []string{"acme"}, nil, "acme", "cfg-acme", nil, 1, 1, 1},
		{"unknown id costs nothing", 0, nil, nil, "ghost", "", ErrNotFound, 1, 1, 1},
		{"new tenant waits for the refresh", 30 * time.Second, []string{"acme", "globex"}, nil, "globex", "", ErrNotFound, 1, 1, 1},
		{"refresh brings it in", 31 * time.Second, []string{"acme", "globex"}, nil, "globex", "cfg-globex", nil, 2, 2, 2},
		{"failed refresh keeps the list", 61 * time.Second, nil, errors.New("throttled"), "globex", "cfg-globex", nil, 3, 2, 2},
		{"and retries it soon", RetryAfterFailure + time.Second, []string{"acme"}, nil, "globex", "", ErrNotFound, 4, 2, 2},
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		listed, listErr = st.listed, st.listErr
		got, err := d.Get(ctx, st.id)
		if got != st.want || !errors.Is(err, st.wantErr) || lists.Load() != st.lists || loads.Load() != st.loads || cache.Len() != st.cacheSize {
			t.Errorf("%s: Get(%q) = %q, %v after %d lists, %d loads, cache %d; want %q, %v after %d, %d, cache %d",
				st.name, st.id, got, err, lists.Load(), loads.Load(), cache.Len(), st.want, st.wantErr, st.lists, st.loads, st.cacheSize)
		}
	}

	fresh := NewDirectory(func(context.Context) ([]string, error) { return nil, errors.New("access denied") }, cache, 0, clock)
	if _, err := fresh.Get(ctx, "acme"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Get() before any list loaded = %v, want the list's error (a retryable failure, not 404)", err)
	}
}

func TestValidate(t *testing.T) {
	const secret = "s3cr3t-value"
	gh := func(secrets ...string) Inbound {
		return Inbound{Providers: map[string]webhook.Config{"github": {Secrets: secrets}}}
	}
	tests := []struct {
		name    string
		in      Inbound
		out     Outbound
		wantErr string // "" = valid
	}{
		{"valid", gh(secret), Outbound{TargetURL: "https://example.com/hooks?token=" + secret, Secrets: []string{secret}, Timeout: "5s"}, ""},
		{"no outbound", gh(secret), Outbound{}, ""},
		{"no providers", Inbound{}, Outbound{}, ""},
		{"unknown provider", Inbound{Providers: map[string]webhook.Config{"paypal": {Secrets: []string{secret}}}}, Outbound{}, "providers.paypal: unknown provider"},
		{"no secrets", gh(), Outbound{}, "providers.github.secrets: at least one secret is required"},
		{"empty secret", gh(secret, ""), Outbound{}, "providers.github.secrets[1]: empty secret"},
		{"blank secret", gh(" "), Outbound{}, "providers.github.secrets[0]: empty secret"},
		{"relative url setting", Inbound{Providers: map[string]webhook.Config{"hmac": {Secrets: []string{secret}, Settings: map[string]string{"header": "X-Sig", "base_url": "/hooks"}}}}, Outbound{}, "providers.hmac.settings.base_url: not an absolute http(s) URL"},
		{"url with user info", gh(secret), Outbound{TargetURL: "https://u:" + secret + "@example.com", Secrets: []string{secret}}, "outbound.targetUrl: URL must not carry user information"},
		{"target without secret", gh(secret), Outbound{TargetURL: "https://example.com"}, "outbound.secrets: a targetUrl needs at least one signing secret"},
		{"empty outbound secret", gh(secret), Outbound{TargetURL: "https://example.com", Secrets: []string{""}}, "outbound.secrets[0]: empty secret"},
		{"bad timeout", gh(secret), Outbound{Timeout: "soon"}, "outbound.timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := errors.Join(tt.in.Validate("acme", provider.Registry()), tt.out.Validate("acme"))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `tenant "acme": `+tt.wantErr) {
				t.Fatalf("Validate() = %v, want ErrInvalid naming tenant \"acme\" and %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Validate() error %q reveals the secret", err)
			}
		})
	}
}

func TestSSMListsOnboardedTenantsOnMoto(t *testing.T) {
	client := ssm.NewFromConfig(awstest.Config(t, awstest.Moto(t)))
	prefix := "/" + awstest.Name(t)
	store := NewSSM(client, prefix)
	ctx := context.Background()
	if ids, err := store.IDs(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("IDs() on a new stack = %v, %v; want none", ids, err)
	}
	in := Inbound{Providers: map[string]webhook.Config{"github": {Secrets: []string{"s1"}}}}
	// 105 ids of 40 characters (99 fit in one) overflow one 4 KB list parameter.
	var want []string
	for i := range 105 {
		id := fmt.Sprintf("%s%03d", strings.Repeat("t", 37), i)
		want = append(want, id)
		if err := store.Put(ctx, id, in, Outbound{}, "", provider.Registry()); err != nil {
			t.Fatalf("Put(%s) = %v", id, err)
		}
	}
	if err := store.Put(ctx, want[0], in, Outbound{}, "", provider.Registry()); err != nil { // again: listed once
		t.Fatal(err)
	}
	ids, err := store.IDs(ctx)
	if err != nil || strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("IDs() = %d ids, %v; want the %d registered, each once", len(ids), err, len(want))
	}

	bad := Inbound{Providers: map[string]webhook.Config{"github": {Secrets: []string{""}}}}
	if err := store.Put(ctx, "broken", bad, Outbound{}, "", provider.Registry()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Put(empty secret) = %v, want ErrInvalid", err)
	}
	if _, err := store.Inbound(ctx, "broken", provider.Registry()); !errors.Is(err, ErrNotFound) {
		t.Errorf("after a refused Put, Inbound() = %v, want ErrNotFound (nothing written)", err)
	}
	// A parameter written around Put (by hand, an old script) is checked on load.
	_, err = client.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(prefix + "/tenants/handmade/inbound"),
		Value: aws.String(`{"providers":{"stripe":{"secrets":[]}}}`), Type: ssmtypes.ParameterTypeSecureString})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Inbound(ctx, "handmade", provider.Registry()); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "providers.stripe.secrets") {
		t.Errorf("Inbound(handmade) = %v, want ErrInvalid naming providers.stripe.secrets", err)
	}
}
