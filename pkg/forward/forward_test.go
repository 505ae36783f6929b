package forward_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	standardwebhookslib "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/provider/standardwebhooks"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// The official Standard Webhooks test vector, from
// github.com/standard-webhooks/standard-webhooks, libraries/go/webhook_test.go
// (TestWebhookSign; the same vector is in the spec's other reference
// libraries and in svix's).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignStandardWebhooksVector(t *testing.T) {
	got, err := forward.Sign(vectorID, time.Unix(vectorTimestamp, 0), []byte(vectorBody), []string{vectorSecret})
	if err != nil || got != vectorSignature {
		t.Errorf("Sign(vector) = %q, %v; want %q", got, err, vectorSignature)
	}
	// Without the whsec_ prefix, as the reference libraries also accept.
	got, err = forward.Sign(vectorID, time.Unix(vectorTimestamp, 0), []byte(vectorBody), []string{strings.TrimPrefix(vectorSecret, "whsec_")})
	if err != nil || got != vectorSignature {
		t.Errorf("Sign(vector, unprefixed) = %q, %v; want %q", got, err, vectorSignature)
	}
}

func TestSignEverySecret(t *testing.T) {
	other := "whsec_" + "c2Vjb25kLXNlY3JldC1mb3ItdGVzdHM=" // "second-secret-for-tests"
	got, err := forward.Sign(vectorID, time.Unix(vectorTimestamp, 0), []byte(vectorBody), []string{vectorSecret, other})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(got, " ")
	if len(parts) != 2 || parts[0] != vectorSignature || !strings.HasPrefix(parts[1], "v1,") || parts[1] == parts[0] {
		t.Errorf("Sign(two secrets) = %q, want the vector signature then a second v1 signature", got)
	}
	for _, bad := range [][]string{nil, {"whsec_not base64!"}, {"whsec_"}} {
		if _, err := forward.Sign("id", time.Now(), nil, bad); !errors.Is(err, forward.ErrInvalidSecret) {
			t.Errorf("Sign(secrets %q) = %v, want ErrInvalidSecret", bad, err)
		}
	}
}

// verifyOfficial verifies a delivery as a receiver does: with the official
// Standard Webhooks library, under each secret (the tests check the
// timestamp header against their clock themselves).
func verifyOfficial(t *testing.T, h http.Header, body []byte, secrets []string) {
	t.Helper()
	for i, secret := range secrets {
		wh, err := standardwebhookslib.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.VerifyIgnoringTimestamp(body, h); err != nil {
			t.Errorf("the official library cannot verify the delivery under secret %d: %v", i+1, err)
		}
	}
}

func TestMessageID(t *testing.T) {
	a := forward.MessageID("acme#stripe#evt_1")
	if a != forward.MessageID("acme#stripe#evt_1") || !strings.HasPrefix(a, "msg_") || len(a) != 4+32 {
		t.Errorf("MessageID() = %q, want a stable msg_ + 32 hex id", a)
	}
	if a == forward.MessageID("acme#stripe#evt_2") {
		t.Error("MessageID() is the same for two events")
	}
	if strings.Contains(a, "acme") || strings.Contains(a, "evt_1") {
		t.Errorf("MessageID() = %q reveals the key", a)
	}
}

func TestClassify(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ra := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	tests := []struct {
		name       string
		status     int
		h          http.Header
		err        error
		want       error // nil, ErrRejected or ErrUnavailable
		permanent  bool
		retryAfter time.Duration
	}{
		{"200", 200, nil, nil, nil, false, 0},
		{"202", 202, nil, nil, nil, false, 0},
		{"204", 204, nil, nil, nil, false, 0},
		{"301 is not followed", 301, nil, nil, forward.ErrRejected, true, 0},
		{"400", 400, nil, nil, forward.ErrRejected, true, 0},
		{"401", 401, nil, nil, forward.ErrRejected, true, 0},
		{"404", 404, nil, nil, forward.ErrRejected, true, 0},
		{"409 is a conflict that may clear", 409, nil, nil, forward.ErrUnavailable, false, 0},
		{"425 too early", 425, ra("3"), nil, forward.ErrUnavailable, false, 3 * time.Second},
		{"403", 403, nil, nil, forward.ErrRejected, true, 0},
		{"413", 413, nil, nil, forward.ErrRejected, true, 0},
		{"410", 410, nil, nil, forward.ErrRejected, true, 0},
		{"422", 422, nil, nil, forward.ErrRejected, true, 0},
		{"408", 408, nil, nil, forward.ErrUnavailable, false, 0},
		{"429 with seconds", 429, ra("120"), nil, forward.ErrUnavailable, false, 2 * time.Minute},
		{"429 with an HTTP date", 429, ra(now.Add(90 * time.Second).Format(http.TimeFormat)), nil, forward.ErrUnavailable, false, 90 * time.Second},
		{"429 with a past date", 429, ra(now.Add(-time.Hour).Format(http.TimeFormat)), nil, forward.ErrUnavailable, false, 0},
		{"429 with garbage", 429, ra("soon"), nil, forward.ErrUnavailable, false, 0},
		{"500", 500, nil, nil, forward.ErrUnavailable, false, 0},
		{"502", 502, nil, nil, forward.ErrUnavailable, false, 0},
		{"503 with Retry-After", 503, ra("7"), nil, forward.ErrUnavailable, false, 7 * time.Second},
		{"504", 504, nil, nil, forward.ErrUnavailable, false, 0},
		{"timeout", 0, nil, fmt.Errorf("do: %w", context.DeadlineExceeded), forward.ErrUnavailable, false, 0},
		{"connection refused", 0, nil, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, forward.ErrUnavailable, false, 0},
		{"connection reset", 0, nil, &url.Error{Op: "Post", URL: "https://x", Err: syscall.ECONNRESET}, forward.ErrUnavailable, false, 0},
		{"unknown certificate authority", 0, nil, &url.Error{Op: "Post", URL: "https://x", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, forward.ErrMisconfigured, true, 0},
		{"certificate for another host", 0, nil, &url.Error{Op: "Post", URL: "https://x", Err: x509.HostnameError{Host: "x", Certificate: &x509.Certificate{}}}, forward.ErrMisconfigured, true, 0},
		{"expired certificate", 0, nil, x509.CertificateInvalidError{Reason: x509.Expired, Cert: &x509.Certificate{}}, forward.ErrMisconfigured, true, 0},
		{"handshake failure alert", 0, nil, tls.AlertError(40), forward.ErrMisconfigured, true, 0},
		{"internal error alert is transient", 0, nil, tls.AlertError(80), forward.ErrUnavailable, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := forward.Classify(tt.status, tt.h, tt.err, now)
			if tt.want == nil {
				if err != nil {
					t.Errorf("Classify(%d) = %v, want nil", tt.status, err)
				}
				return
			}
			var fe *forward.Error
			if !errors.Is(err, tt.want) || !errors.As(err, &fe) {
				t.Fatalf("Classify(%d, %v) = %v, want %v", tt.status, tt.err, err, tt.want)
			}
			if fe.Permanent() != tt.permanent || fe.RetryAfter() != tt.retryAfter {
				t.Errorf("Classify(%d) = permanent %v, retry after %s; want %v, %s", tt.status, fe.Permanent(), fe.RetryAfter(), tt.permanent, tt.retryAfter)
			}
		})
	}
}

func TestPost(t *testing.T) {
	secrets := []string{vectorSecret}
	now := time.Now()
	var got *http.Request
	var gotBody []byte
	status := http.StatusNoContent
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		if status == http.StatusFound {
			http.Redirect(w, r, "/elsewhere", status)
			return
		}
		w.WriteHeader(status)
	}))
	defer target.Close()
	c := forward.New(nil, func() time.Time { return now })
	req := forward.Request{
		URL:            target.URL + "/events",
		ID:             forward.MessageID("acme#stripe#evt_1"),
		IdempotencyKey: "idem-1",
		Body:           []byte(`{"id":"evt_1"}`),
		Secrets:        secrets,
		Headers:        map[string]string{"Hookpack-Provider": "stripe", "webhook-signature": "forged"},
	}
	if err := c.Post(context.Background(), req); err != nil {
		t.Fatalf("Post() = %v", err)
	}
	verifyOfficial(t, got.Header, gotBody, secrets)
	checks := map[string]string{
		"Idempotency-Key":   "idem-1",
		"Content-Type":      "application/json",
		"Webhook-Id":        req.ID,
		"Webhook-Timestamp": strconv.FormatInt(now.Unix(), 10),
		"Hookpack-Provider": "stripe",
	}
	for k, want := range checks {
		if v := got.Header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	if got.Method != http.MethodPost || string(gotBody) != `{"id":"evt_1"}` {
		t.Errorf("target got %s %q", got.Method, gotBody)
	}

	status = http.StatusFound
	if err := c.Post(context.Background(), req); !errors.Is(err, forward.ErrRejected) || got.URL.Path != "/events" {
		t.Errorf("Post() answered 302 = %v (path %s), want ErrRejected without following", err, got.URL.Path)
	}
	status = http.StatusServiceUnavailable
	if err := c.Post(context.Background(), req); !errors.Is(err, forward.ErrUnavailable) {
		t.Errorf("Post() answered 503 = %v, want ErrUnavailable", err)
	}
}

func TestPostFailures(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release) // before Close, which waits for handlers
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	var tlsHits atomic.Int32
	untrusted := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { tlsHits.Add(1) }))
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // the expected handshake failures
	untrusted.StartTLS()
	defer untrusted.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0) // RST instead of FIN
			conn.Close()
		}
	}))
	defer reset.Close()
	c := forward.New(nil, nil)
	base := forward.Request{ID: "msg_1", Body: []byte("{}"), Secrets: []string{vectorSecret}}

	tests := []struct {
		name      string
		mod       func(r *forward.Request)
		ctx       func() (context.Context, context.CancelFunc)
		want      error
		permanent bool
	}{
		{"timeout is transient", func(r *forward.Request) { r.URL = slow.URL; r.Timeout = 50 * time.Millisecond }, nil, forward.ErrUnavailable, false},
		{"refused connection is transient", func(r *forward.Request) { r.URL = closedURL }, nil, forward.ErrUnavailable, false},
		{"relative URL is permanent", func(r *forward.Request) { r.URL = "/events" }, nil, forward.ErrMisconfigured, true},
		{"ftp URL is permanent", func(r *forward.Request) { r.URL = "ftp://example.com/x" }, nil, forward.ErrMisconfigured, true},
		{"no secret is permanent", func(r *forward.Request) { r.URL = slow.URL; r.Secrets = nil }, nil, forward.ErrMisconfigured, true},
		{"untrusted TLS certificate is permanent", func(r *forward.Request) { r.URL = untrusted.URL }, nil, forward.ErrMisconfigured, true},
		{"https to a plain-text port is permanent", func(r *forward.Request) { r.URL = strings.Replace(plain.URL, "http:", "https:", 1) }, nil, forward.ErrMisconfigured, true},
		{"URL with a space in the host is permanent", func(r *forward.Request) { r.URL = "https://exa mple.com/x" }, nil, forward.ErrMisconfigured, true},
		{"header name that is not a token is permanent", func(r *forward.Request) { r.URL = slow.URL; r.Headers = map[string]string{"Bad Name": "x"} }, nil, forward.ErrMisconfigured, true},
		{"reset connection is transient", func(r *forward.Request) { r.URL = reset.URL }, nil, forward.ErrUnavailable, false},
		{"cancelled caller is not the target's fault", func(r *forward.Request) { r.URL = slow.URL }, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 30*time.Millisecond)
		}, context.DeadlineExceeded, false},
	}
	defer func() {
		if n := tlsHits.Load(); n != 0 {
			t.Errorf("the untrusted TLS target received %d requests, want 0", n)
		}
	}()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			tt.mod(&r)
			ctx, cancel := context.Background(), func() {}
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			err := c.Post(ctx, r)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Post() = %v, want %v", err, tt.want)
			}
			var fe *forward.Error
			isFE := errors.As(err, &fe)
			if tt.want == context.DeadlineExceeded {
				if isFE {
					t.Errorf("Post() = %#v, want the caller's context error, not a target classification", err)
				}
				return
			}
			if !isFE || fe.Permanent() != tt.permanent {
				t.Errorf("Post() = %v, want permanent=%v", err, tt.permanent)
			}
		})
	}
}

func TestPostTrustedTLS(t *testing.T) {
	target := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer target.Close()
	err := forward.New(target.Client(), nil).Post(context.Background(), forward.Request{URL: target.URL, ID: "msg_1", Body: []byte("{}"), Secrets: []string{vectorSecret}})
	if err != nil {
		t.Errorf("Post(trusted TLS target) = %v, want nil", err)
	}
}

// Header values come from events (a conversation id is provider data): a
// CR or LF in one must neither break the request nor add a header.
func TestPostSanitisesHeaderValues(t *testing.T) {
	var got []http.Header
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = append(got, r.Header.Clone()) }))
	defer target.Close()
	tests := []struct {
		name, value, want string
	}{
		{"CRLF and an injected header", "cus_1\r\nX-Injected: yes", "cus_1  X-Injected: yes"},
		{"bare LF", "a\nb", "a b"},
		{"NUL and DEL", "a\x00b\x7fc", "a b c"},
		{"tab and UTF-8 kept", "a\tb é", "a\tb é"},
	}
	c := forward.New(nil, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			err := c.Post(context.Background(), forward.Request{
				URL: target.URL, ID: "msg_1", IdempotencyKey: "k\r\n1", Body: []byte("{}"), Secrets: []string{vectorSecret},
				ContentType: "application/json\r\nX-Injected: ct",
				Headers:     map[string]string{"Hookpack-Conversation": tt.value},
			})
			if err != nil || len(got) != 1 {
				t.Fatalf("Post(conversation %q) = %v with %d requests, want nil and 1", tt.value, err, len(got))
			}
			if v := got[0].Get("Hookpack-Conversation"); v != tt.want {
				t.Errorf("Hookpack-Conversation = %q, want %q", v, tt.want)
			}
			if v := got[0].Values("X-Injected"); len(v) != 0 {
				t.Errorf("X-Injected = %q, want no such header", v)
			}
			if v := got[0].Get("Idempotency-Key"); v != "k  1" {
				t.Errorf("Idempotency-Key = %q, want %q", v, "k  1")
			}
		})
	}
}

// What the forward effect sends must pass the pack's own inbound Standard
// Webhooks verifier, so one hookpack can forward to another.
func TestPostPassesTheInboundStandardWebhooksVerifier(t *testing.T) {
	now := time.Now()
	var req *webhook.Request
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req = &webhook.Request{Method: r.Method, Header: r.Header.Clone(), Body: body}
	}))
	defer target.Close()
	secrets := []string{"whsec_" + "c2Vjb25kLXNlY3JldC1mb3ItdGVzdHM=", vectorSecret}
	err := forward.New(nil, func() time.Time { return now }).Post(context.Background(), forward.Request{
		URL: target.URL, ID: forward.MessageID("acme#stripe#evt_1"), Body: []byte(`{"id":"evt_1"}`), Secrets: secrets,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The receiver knows only the second (rotated-in) secret.
	if err := (standardwebhooks.Provider{}).Verify(req, webhook.Config{Secrets: secrets[1:]}, now); err != nil {
		t.Errorf("standardwebhooks.Verify(forwarded delivery) = %v", err)
	}
}
