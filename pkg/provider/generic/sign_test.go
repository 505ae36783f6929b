package generic

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const samplesDir = "../../../events/samples"

// TestSignVerifies signs with every worked configuration of hmac_test.go
// (and a few more setting combinations) and verifies the result.
func TestSignVerifies(t *testing.T) {
	now := time.Unix(1700000000, 0)
	body := `{"id":"1","event_id":"evt_1","type":"x","webhookTimestamp":` + strconv.FormatInt(now.UnixMilli(), 10) + `}`
	tests := []struct {
		name     string
		settings map[string]string
		stamped  bool // the signature carries a timestamp checked against the tolerance
	}{
		{"github-style prefix", githubCfg, false},
		{"slack-style timestamp header", slackCfg, true},
		{"stripe-style param list", stripeCfg, true},
		{"paddle", paddleCfg, true},
		{"zendesk base64", zendeskCfg, true},
		{"square url", squareCfg, false},
		{"intercom sha1", intercomCfg, false},
		{"linear body timestamp", linearCfg, true},
		{"sha512 base64 with prefix", map[string]string{"header": "X-Sig", "algorithm": "sha512", "encoding": "base64", "prefix": "sha512="}, false},
		{"param without timestamp", map[string]string{"header": "X-Sig", "param": "v1"}, false},
		{"timestamp header and param list", map[string]string{"header": "X-Sig", "param": "s", "timestamp_header": "X-Ts", "signed": "{timestamp}.{url}.{body}"}, true},
	}
	for _, tt := range tests {
		cfg := webhook.Config{Secrets: []string{"first-secret", "second-secret"}, Settings: tt.settings}
		sign := func(t *testing.T) *webhook.Request {
			t.Helper()
			req := &webhook.Request{Method: http.MethodPost, Body: []byte(body), URL: "https://abc.execute-api.eu-west-1.amazonaws.com/webhooks/acme/hmac?x=1"}
			if err := (Provider{}).Sign(req, cfg, now); err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			return req
		}
		t.Run(tt.name, func(t *testing.T) {
			req := sign(t)
			if err := (Provider{}).Verify(req, cfg, now); err != nil {
				t.Errorf("Verify(%v) = %v, want nil", req.Header, err)
			}
			only2 := webhook.Config{Secrets: []string{"second-secret"}, Settings: tt.settings}
			if err := (Provider{}).Verify(req, only2, now); !errors.Is(err, webhook.ErrInvalidSignature) {
				t.Errorf("Verify(second secret only) = %v, want %v", err, webhook.ErrInvalidSignature)
			}
			req.Body = append(req.Body, ' ')
			if err := (Provider{}).Verify(req, cfg, now); !errors.Is(err, webhook.ErrInvalidSignature) {
				t.Errorf("Verify(tampered body) = %v, want %v", err, webhook.ErrInvalidSignature)
			}
			late := now.Add(time.Hour)
			err := Provider{}.Verify(sign(t), cfg, late)
			switch {
			case tt.stamped && !errors.Is(err, webhook.ErrStale):
				t.Errorf("Verify(an hour later) = %v, want %v", err, webhook.ErrStale)
			case !tt.stamped && err != nil:
				t.Errorf("Verify(an hour later) = %v, want nil (no timestamp)", err)
			}
		})
	}
}

func TestSignErrors(t *testing.T) {
	tests := []struct {
		name     string
		secrets  []string
		settings map[string]string
		url      string
		want     error
	}{
		{"no header", []string{"s"}, map[string]string{}, "", webhook.ErrMisconfigured},
		{"unknown algorithm", []string{"s"}, map[string]string{"header": "X", "algorithm": "md5"}, "", webhook.ErrMisconfigured},
		{"unknown encoding", []string{"s"}, map[string]string{"header": "X", "encoding": "base32"}, "", webhook.ErrMisconfigured},
		{"timestamp_param without param", []string{"s"}, map[string]string{"header": "X", "timestamp_param": "t"}, "", webhook.ErrMisconfigured},
		{"{timestamp} without a source", []string{"s"}, map[string]string{"header": "X", "signed": "{timestamp}.{body}"}, "", webhook.ErrMisconfigured},
		{"bad base_url", []string{"s"}, map[string]string{"header": "X", "signed": "{url}{body}", "base_url": "example.com"}, "https://a.example/p", webhook.ErrMisconfigured},
		{"relative URL with base_url", []string{"s"}, map[string]string{"header": "X", "signed": "{url}{body}", "base_url": "https://b.example"}, "/p", webhook.ErrMalformed},
		{"no secrets", nil, map[string]string{"header": "X"}, "", webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &webhook.Request{Method: http.MethodPost, Body: []byte("{}"), URL: tt.url}
			err := Provider{}.Sign(req, webhook.Config{Secrets: tt.secrets, Settings: tt.settings}, time.Now())
			if !errors.Is(err, tt.want) {
				t.Errorf("Sign() = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestSignReproducesVectors signs the Paddle sample at its "at" and the
// published GitHub, Slack and Stripe vectors through their settings,
// expecting the published headers.
func TestSignReproducesVectors(t *testing.T) {
	s, err := samples.LoadSample(samplesDir, "hmac", "paddle-transaction-paid")
	if err != nil {
		t.Fatal(err)
	}
	req := s.Request()
	want := req.Header.Get("Paddle-Signature")
	req.Header.Del("Paddle-Signature")
	if err := (Provider{}).Sign(req, s.TenantConfig, s.Time()); err != nil {
		t.Fatalf("Sign() = %v", err)
	}
	if got := req.Header.Get("Paddle-Signature"); got != want {
		t.Errorf("Sign(paddle sample) = %q, want %q", got, want)
	}

	slackAt, _ := strconv.ParseInt(slackTS, 10, 64)
	stripeAt := time.Unix(1533204620, 0)
	tests := []struct {
		name, secret, body string
		settings           map[string]string
		at                 time.Time
		header, want       string
	}{
		{"github", githubSecret, githubBody, githubCfg, time.Time{}, "X-Hub-Signature-256", githubSig},
		{"slack", slackSecret, slackBody, slackCfg, time.Unix(slackAt, 0), "X-Slack-Signature", slackSig},
		{"stripe", stripeSecret, stripeBody(t), stripeCfg, stripeAt, "Stripe-Signature", "t=1533204620,v1=" + stripeV1},
	}
	for _, tt := range tests {
		req := &webhook.Request{Method: http.MethodPost, Body: []byte(tt.body)}
		if err := (Provider{}).Sign(req, webhook.Config{Secrets: []string{tt.secret}, Settings: tt.settings}, tt.at); err != nil {
			t.Fatalf("Sign(%s) = %v", tt.name, err)
		}
		if got := req.Header.Get(tt.header); got != tt.want {
			t.Errorf("Sign(%s) %s = %q, want %q", tt.name, tt.header, got, tt.want)
		}
		if ts := tt.settings["timestamp_header"]; ts != "" && req.Header.Get(ts) != slackTS {
			t.Errorf("Sign(%s) %s = %q, want %q", tt.name, ts, req.Header.Get(ts), slackTS)
		}
	}
}
