package whatsapp

import (
	"bytes"
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
	signing := webhook.Config{Secrets: []string{"new-app-secret", "old-app-secret"}}
	// Meta escapes non-ASCII and slashes; the signature must cover these
	// exact bytes.
	body := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messages":[{"id":"wamid.1","from":"1555","type":"text","text":{"body":"caf\u00e9 \/ ok"}}]}}]}]}`)
	tests := []struct {
		name   string
		tamper func(*webhook.Request)
		verify webhook.Config
		want   error
	}{
		{"round trip", nil, signing, nil},
		{"verifier lists the signing secret second", nil, webhook.Config{Secrets: []string{"other", "new-app-secret"}}, nil},
		{"signs with the first secret, not the second", nil, webhook.Config{Secrets: []string{"old-app-secret"}}, webhook.ErrInvalidSignature},
		{"body re-encoded", func(r *webhook.Request) { r.Body = bytes.Replace(r.Body, []byte(`\u00e9`), []byte("é"), 1) }, signing, webhook.ErrInvalidSignature},
		{"signature removed", func(r *webhook.Request) { r.Header.Del("X-Hub-Signature-256") }, signing, webhook.ErrMissingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &webhook.Request{Method: http.MethodPost, Body: append([]byte(nil), body...)}
			if err := (Provider{}).Sign(req, signing, now); err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			if tt.tamper != nil {
				tt.tamper(req)
			}
			err := Provider{}.Verify(req, tt.verify, now)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q) = %v, want %v", req.Header.Get("X-Hub-Signature-256"), err, tt.want)
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

// TestSignReproducesSample re-signs Meta's sample message with the sample's
// app secret and expects its published X-Hub-Signature-256.
func TestSignReproducesSample(t *testing.T) {
	s, err := samples.LoadSample(samplesDir, "whatsapp", "message-text")
	if err != nil {
		t.Fatal(err)
	}
	req := s.Request()
	want := req.Header.Get("X-Hub-Signature-256")
	req.Header.Del("X-Hub-Signature-256")
	if err := (Provider{}).Sign(req, s.TenantConfig, s.Time()); err != nil {
		t.Fatalf("Sign() = %v", err)
	}
	if got := req.Header.Get("X-Hub-Signature-256"); got != want {
		t.Errorf("Sign(sample) = %q, want %q", got, want)
	}
}
