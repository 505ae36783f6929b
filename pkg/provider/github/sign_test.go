package github

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
	signing := webhook.Config{Secrets: []string{"new-secret", "old-secret"}}
	tests := []struct {
		name   string
		tamper func(*webhook.Request)
		verify webhook.Config
		want   error
	}{
		{"round trip", nil, signing, nil},
		{"verifier lists the signing secret second", nil, webhook.Config{Secrets: []string{"other", "new-secret"}}, nil},
		{"signs with the first secret, not the second", nil, webhook.Config{Secrets: []string{"old-secret"}}, webhook.ErrInvalidSignature},
		{"tampered body", func(r *webhook.Request) { r.Body = append(r.Body, ' ') }, signing, webhook.ErrInvalidSignature},
		{"signature removed", func(r *webhook.Request) { r.Header.Del("X-Hub-Signature-256") }, signing, webhook.ErrMissingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &webhook.Request{Method: http.MethodPost, Body: []byte(`{"action":"opened"}`)}
			if err := (Provider{}).Sign(req, signing, now); err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			if tt.tamper != nil {
				tt.tamper(req)
			}
			err := Provider{}.Verify(req, tt.verify, now.Add(time.Hour))
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

// TestSignReproducesSample signs the sample delivery, whose signature was
// made with the secret from GitHub's validation docs, and expects the same
// header byte for byte; the docs vector checks the construction too.
func TestSignReproducesSample(t *testing.T) {
	s, err := samples.LoadSample(samplesDir, "github", "issues-opened")
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

	doc := &webhook.Request{Body: []byte(docPayload)}
	if err := (Provider{}).Sign(doc, webhook.Config{Secrets: []string{docSecret}}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := doc.Header.Get("X-Hub-Signature-256"); got != docSignature {
		t.Errorf("Sign(docs vector) = %q, want %q", got, docSignature)
	}
}
