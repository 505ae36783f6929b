package tenant

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/tenantid"
	"github.com/hookpack/hookpack/pkg/webhook"
)

func TestCache(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	var calls atomic.Int32
	fail := errors.New("throttled")
	var failNext atomic.Bool
	c := NewCache(func(_ context.Context, id string) (string, error) {
		calls.Add(1)
		if failNext.Swap(false) {
			return "", fail
		}
		if id == "ghost" {
			return "", ErrNotFound
		}
		return "cfg-" + id, nil
	}, time.Minute, 10*time.Second, clock)
	ctx := context.Background()

	steps := []struct {
		name      string
		id        string
		advance   time.Duration
		failLoad  bool
		want      string
		wantErr   error
		wantCalls int32
	}{
		{"miss loads", "acme", 0, false, "cfg-acme", nil, 1},
		{"hit is free", "acme", 59 * time.Second, false, "cfg-acme", nil, 1},
		{"expired reloads", "acme", 2 * time.Second, false, "cfg-acme", nil, 2},
		{"unknown loads", "ghost", 0, false, "", ErrNotFound, 3},
		{"unknown is cached", "ghost", 9 * time.Second, false, "", ErrNotFound, 3},
		{"negative entry expires", "ghost", 2 * time.Second, false, "", ErrNotFound, 4},
		{"transient error", "other", 0, true, "", fail, 5},
		{"transient error not cached", "other", 0, false, "cfg-other", nil, 6},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		failNext.Store(s.failLoad)
		got, err := c.Get(ctx, s.id)
		if got != s.want || !errors.Is(err, s.wantErr) || calls.Load() != s.wantCalls {
			t.Errorf("%s: Get(%q) = %q, %v after %d loads; want %q, %v after %d", s.name, s.id, got, err, calls.Load(), s.want, s.wantErr, s.wantCalls)
		}
	}
}

func TestCacheSharesConcurrentMisses(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	c := NewCache(func(_ context.Context, id string) (int, error) {
		calls.Add(1)
		<-release
		return 7, nil
	}, 0, 0, nil)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if v, err := c.Get(context.Background(), "acme"); v != 7 || err != nil {
				t.Errorf("Get() = %d, %v", v, err)
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Errorf("loads = %d, want 1", calls.Load())
	}
}

func TestSSMOnMoto(t *testing.T) {
	client := ssm.NewFromConfig(awstest.Config(t, awstest.Moto(t)))
	store := NewSSM(client, "/"+awstest.Name(t))
	ctx := context.Background()
	in := Inbound{Providers: map[string]webhook.Config{"github": {Secrets: []string{"s1", "s2"}}}}
	out := Outbound{TargetURL: "https://example.test/hook", Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}
	if err := store.Put(ctx, "acme", in, out, "", provider.Registry()); err != nil {
		t.Fatalf("Put() = %v", err)
	}
	gotIn, err := store.Inbound(ctx, "acme", provider.Registry())
	if err != nil || len(gotIn.Providers["github"].Secrets) != 2 {
		t.Fatalf("Inbound() = %+v, %v", gotIn, err)
	}
	gotOut, err := store.Outbound(ctx, "acme")
	if err != nil || gotOut.TargetURL != out.TargetURL {
		t.Fatalf("Outbound() = %+v, %v", gotOut, err)
	}
	dests := Outbound{Destinations: []Destination{{Name: "ci", URL: "https://ci.example", Secrets: out.Secrets, Rate: "10/s", Burst: 5,
		Filter: &route.Filter{Events: []string{"github:push"}, Where: []route.Condition{{Path: "ref", In: []route.Value{route.Value(`"refs/heads/main"`)}}, {Path: "x", Equals: route.Value("null")}}}}}}
	if err := store.Put(ctx, "globex", in, dests, "", provider.Registry()); err != nil {
		t.Fatalf("Put(destinations) = %v", err)
	}
	if got, err := store.Outbound(ctx, "globex"); err != nil || !reflect.DeepEqual(got, dests) {
		t.Errorf("Outbound() = %+v, %v, want %+v", got, err, dests)
	}
	// The routes parameter: names and filters, read with the inbound one.
	if got, err := store.Inbound(ctx, "globex", provider.Registry()); err != nil || len(got.Routes.Streams) != 1 || !reflect.DeepEqual(got.Routes, dests.Routes()) {
		t.Errorf("Inbound().Routes = %+v, %v, want %+v", got.Routes, err, dests.Routes())
	}
	dests.Destinations[0].Filter.Events = []string{"stripe:*"} // not enabled in in
	if err := store.Put(ctx, "initech", in, dests, "", provider.Registry()); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `sender "stripe" is not enabled`) {
		t.Errorf("Put(a filter on a sender not enabled) = %v, want ErrInvalid naming it", err)
	}
	if _, err := store.Inbound(ctx, "nobody", provider.Registry()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Inbound(unknown) = %v, want ErrNotFound", err)
	}
	if err := store.Put(ctx, "Bad/ID", in, out, "", provider.Registry()); !errors.Is(err, tenantid.ErrInvalid) {
		t.Errorf("Put(bad id) = %v, want tenantid.ErrInvalid", err)
	}
}

// TestLoadFile: make run's tenants file is checked as tenant.sh add checks
// a tenant's files (scripts/tenant/check), and every problem is named at
// once, each with its file, tenant and field.
func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const gh = `"providers":{"github":{"secrets":["x"]}}`
	tests := []struct {
		name, body string
		want       []string // none: valid
	}{
		{"ok", `{"tenants":{"b":{"providers":{"github":{"secrets":["x"]}}},"a":{"providers":{"stripe":{"secrets":["y"]}}}}}`, nil},
		{"bad json", `{"tenants":`, []string{"unexpected end"}},
		{"bad id", `{"tenants":{"A B":{` + gh + `},"a":{` + gh + `}}}`, []string{"invalid tenant id"}},
		{"no providers", `{"tenants":{"a":{"providers":{}},"b":{` + gh + `}}}`, []string{"enables no provider"}},
		{"empty secret", `{"tenants":{"a":{"providers":{"github":{"secrets":[""]}}},"b":{` + gh + `}}}`, []string{`tenant "a": providers.github.secrets[0]: empty secret`}},
		{"unknown provider", `{"tenants":{"a":{"providers":{"paypal":{"secrets":["x"]}}},"b":{` + gh + `}}}`, []string{`tenant "a": providers.paypal: unknown provider`}},
		{"bad target url", `{"tenants":{"a":{` + gh + `,"outbound":{"targetUrl":"ftp://x","secrets":["y"]}},"b":{` + gh + `}}}`, []string{`tenant "a": outbound.targetUrl`}},
		{"a filter on a sender not enabled", `{"tenants":{"a":{` + gh + `,"outbound":{"destinations":[{"name":"d","url":"https://d.example","secrets":["y"],"filter":{"events":["stripe:*"]}}]}},"b":{` + gh + `}}}`,
			[]string{`tenant "a": outbound.destinations[0].filter.events[0]: sender "stripe" is not enabled`}},
		{"a misspelt filter field", `{"tenants":{"a":{` + gh + `,"outbound":{"destinations":[{"name":"d","url":"https://d.example","secrets":["y"],"filter":{"event":["github:push"]}}]}},"b":{` + gh + `}}}`,
			[]string{`tenants.a.outbound.destinations[0].filter: unknown field "event"`}},
		{"every problem of every tenant", `{"tenant":{},"tenants":{"a":{"provider":{},` + gh + `,"outbound":{"targetUrl":"ftp://x","secrets":["y"],"retries":3}},"b":{"providers":{"paypal":{"secrets":[""]}}}}}`,
			[]string{`tenants file ` + dir, `: unknown field "tenant"`, `tenants.a: unknown field "provider"`, `tenants.a.outbound: unknown field "retries"`,
				`tenant "a": outbound.targetUrl: not an absolute http(s) URL`, `tenant "b": providers.paypal: unknown provider`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := LoadFile(write(tt.name+".json", tt.body), provider.Registry())
			if len(tt.want) > 0 {
				if err == nil || f != nil {
					t.Fatalf("LoadFile() = %v, %v; want no file and an error containing %q", f, err, tt.want)
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("LoadFile() = %v\nwant %q in it", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ids := f.IDs(); len(ids) != 2 || ids[0] != "a" {
				t.Errorf("IDs() = %v, want [a b]", ids)
			}
		})
	}
}
