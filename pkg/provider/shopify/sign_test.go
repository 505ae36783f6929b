package shopify

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
	signing := webhook.Config{Secrets: []string{"new-client-secret", "old-client-secret"}}
	tests := []struct {
		name    string
		headers map[string]string
		tamper  func(*webhook.Request)
		verify  webhook.Config
		want    error
		header  string // where the signature must land
	}{
		{"round trip", map[string]string{"X-Shopify-Topic": "orders/create"}, nil, signing, nil, "X-Shopify-Hmac-Sha256"},
		{"unprefixed Events headers", map[string]string{"Shopify-Topic": "orders/create"}, nil, signing, nil, "Shopify-Hmac-Sha256"},
		{"stale signature replaced", map[string]string{"X-Shopify-Hmac-Sha256": "AAAA", "Shopify-Hmac-Sha256": "AAAA"}, nil, signing, nil, "X-Shopify-Hmac-Sha256"},
		{"verifier lists the signing secret second", nil, nil, webhook.Config{Secrets: []string{"other", "new-client-secret"}}, nil, "X-Shopify-Hmac-Sha256"},
		{"signs with the first secret, not the second", nil, nil, webhook.Config{Secrets: []string{"old-client-secret"}}, webhook.ErrInvalidSignature, "X-Shopify-Hmac-Sha256"},
		{"tampered body", nil, func(r *webhook.Request) { r.Body = append(r.Body, ' ') }, signing, webhook.ErrInvalidSignature, "X-Shopify-Hmac-Sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &webhook.Request{Method: http.MethodPost, Header: http.Header{}, Body: []byte(`{"id":820982911946154508}`)}
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			if err := (Provider{}).Sign(req, signing, now); err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			if req.Header.Get(tt.header) == "" {
				t.Fatalf("Sign() set no %s: %v", tt.header, req.Header)
			}
			if tt.tamper != nil {
				tt.tamper(req)
			}
			err := Provider{}.Verify(req, tt.verify, now)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q) = %v, want %v", req.Header.Get(tt.header), err, tt.want)
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

// TestSignReproducesSample re-signs the orders/create sample with its
// secret and expects its published X-Shopify-Hmac-Sha256.
func TestSignReproducesSample(t *testing.T) {
	s, err := samples.LoadSample(samplesDir, "shopify", "orders-create")
	if err != nil {
		t.Fatal(err)
	}
	req := s.Request()
	want := req.Header.Get("X-Shopify-Hmac-Sha256")
	req.Header.Del("X-Shopify-Hmac-Sha256")
	if err := (Provider{}).Sign(req, s.TenantConfig, s.Time()); err != nil {
		t.Fatalf("Sign() = %v", err)
	}
	if got := req.Header.Get("X-Shopify-Hmac-Sha256"); got != want {
		t.Errorf("Sign(sample) = %q, want %q", got, want)
	}
}
