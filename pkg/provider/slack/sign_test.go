package slack

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const samplesDir = "../../../events/samples"

func TestSignVerifies(t *testing.T) {
	now := time.Unix(1700000000, 0)
	signing := webhook.Config{Secrets: []string{"new-signing-secret", "old-signing-secret"}}
	tests := []struct {
		name   string
		tamper func(*webhook.Request)
		verify webhook.Config
		at     time.Time
		want   error
	}{
		{"round trip", nil, signing, now, nil},
		{"within the tolerance", nil, signing, now.Add(-300 * time.Second), nil},
		{"stale", nil, signing, now.Add(301 * time.Second), webhook.ErrStale},
		{"verifier lists the signing secret second", nil, webhook.Config{Secrets: []string{"other", "new-signing-secret"}}, now, nil},
		{"signs with the first secret, not the second", nil, webhook.Config{Secrets: []string{"old-signing-secret"}}, now, webhook.ErrInvalidSignature},
		{"tampered body", func(r *webhook.Request) { r.Body = append(r.Body, '&') }, signing, now, webhook.ErrInvalidSignature},
		{"timestamp moved", func(r *webhook.Request) { r.Header.Set("X-Slack-Request-Timestamp", "1700000001") }, signing, now, webhook.ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("Content-Type", "application/x-www-form-urlencoded")
			h.Set("X-Slack-Request-Timestamp", "1") // replaced by Sign
			req := &webhook.Request{Method: http.MethodPost, Header: h, Body: []byte("command=%2Fdeploy&team_id=T1&channel_id=C1")}
			if err := (Provider{}).Sign(req, signing, now); err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			if tt.tamper != nil {
				tt.tamper(req)
			}
			err := Provider{}.Verify(req, tt.verify, tt.at)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q) = %v, want %v", req.Header.Get("X-Slack-Signature"), err, tt.want)
			}
		})
	}
}

func TestSignWithoutSecret(t *testing.T) {
	req := &webhook.Request{Method: http.MethodPost, Body: []byte("{}")}
	if err := (Provider{}).Sign(req, webhook.Config{}, time.Now()); !errors.Is(err, webhook.ErrMisconfigured) {
		t.Errorf("Sign(no secrets) = %v, want %v", err, webhook.ErrMisconfigured)
	}
}

// TestSignReproducesSamples signs every Slack sample at its "at" with the
// documented signing secret; the slash command is Slack's own worked
// example, so its X-Slack-Signature is the official vector.
func TestSignReproducesSamples(t *testing.T) {
	for _, name := range []string{"slash-command", "event-message", "url-verification"} {
		t.Run(name, func(t *testing.T) {
			s, err := samples.LoadSample(samplesDir, "slack", name)
			if err != nil {
				t.Fatal(err)
			}
			req := s.Request()
			wantTS, wantSig := req.Header.Get("X-Slack-Request-Timestamp"), req.Header.Get("X-Slack-Signature")
			req.Header.Del("X-Slack-Request-Timestamp")
			req.Header.Del("X-Slack-Signature")
			if err := (Provider{}).Sign(req, s.TenantConfig, s.Time()); err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			if ts, sig := req.Header.Get("X-Slack-Request-Timestamp"), req.Header.Get("X-Slack-Signature"); ts != wantTS || sig != wantSig {
				t.Errorf("Sign(%s) = %s, %s; want %s, %s", name, ts, sig, wantTS, wantSig)
			}
		})
	}

	// The worked example from Slack's "Verifying requests from Slack".
	req := &webhook.Request{Method: http.MethodPost, Body: []byte(docBody)}
	if err := (Provider{}).Sign(req, webhook.Config{Secrets: []string{docSecret}}, docAt); err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("X-Slack-Signature"); got != docSig || req.Header.Get("X-Slack-Request-Timestamp") != docTS {
		t.Errorf("Sign(docs example) = %q at %q, want %q at %q", got, req.Header.Get("X-Slack-Request-Timestamp"), docSig, docTS)
	}
}
