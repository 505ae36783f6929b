package standardwebhooks

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
	const other = "whsec_b3RoZXIta2V5LW90aGVyLWtleQ=="
	signing := webhook.Config{Secrets: []string{docSecret, other}}
	tests := []struct {
		name   string
		family string // header spelling of the request
		tamper func(*webhook.Request)
		verify webhook.Config
		at     time.Time
		want   error
	}{
		{"round trip", "Webhook-", nil, signing, now, nil},
		{"svix aliases", "Svix-", nil, signing, now, nil},
		{"within the tolerance", "Webhook-", nil, signing, now.Add(5 * time.Minute), nil},
		{"stale", "Webhook-", nil, signing, now.Add(5*time.Minute + time.Second), webhook.ErrStale},
		{"verifier lists the signing secret second", "Webhook-", nil, webhook.Config{Secrets: []string{other, docSecret}}, now, nil},
		{"signs with the first secret, not the second", "Webhook-", nil, webhook.Config{Secrets: []string{other}}, now, webhook.ErrInvalidSignature},
		{"tampered body", "Webhook-", func(r *webhook.Request) { r.Body = append(r.Body, ' ') }, signing, now, webhook.ErrInvalidSignature},
		{"id changed", "Webhook-", func(r *webhook.Request) { r.Header.Set("Webhook-Id", "msg_other") }, signing, now, webhook.ErrInvalidSignature},
		{"svix id changed", "Svix-", func(r *webhook.Request) { r.Header.Set("Svix-Id", "msg_other") }, signing, now, webhook.ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			h.Set(tt.family+"Id", docID)
			// Leftovers of the other spelling must not shadow the new one.
			h.Set("Webhook-Timestamp", "1")
			h.Set("Webhook-Signature", "v1,AAAA")
			req := &webhook.Request{Method: http.MethodPost, Header: h, Body: []byte(docBody)}
			if err := (Provider{}).Sign(req, signing, now); err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			if req.Header.Get(tt.family+"Signature") == "" {
				t.Fatalf("Sign() set no %sSignature: %v", tt.family, req.Header)
			}
			if tt.tamper != nil {
				tt.tamper(req)
			}
			err := Provider{}.Verify(req, tt.verify, tt.at)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify(%v) = %v, want %v", req.Header, err, tt.want)
			}
		})
	}
}

func TestSignErrors(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		secrets []string
		want    error
	}{
		{"no webhook-id", "", []string{docSecret}, webhook.ErrMalformed},
		{"no secrets", docID, nil, webhook.ErrMisconfigured},
		{"public key cannot sign", docID, []string{"whpk_MCowBQYDK2VwAyEA"}, webhook.ErrMisconfigured},
		{"secret not base64", docID, []string{"whsec_***"}, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &webhook.Request{Method: http.MethodPost, Header: http.Header{}, Body: []byte(docBody)}
			if tt.id != "" {
				req.Header.Set("Webhook-Id", tt.id)
			}
			if err := (Provider{}).Sign(req, webhook.Config{Secrets: tt.secrets}, docAt); !errors.Is(err, tt.want) {
				t.Errorf("Sign() = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestSignReproducesSamples signs both samples at their "at": spec-vector is
// the specification's reference vector (TestWebhookSign), svix-invoice-paid
// uses the svix-* aliases.
func TestSignReproducesSamples(t *testing.T) {
	for _, tt := range []struct{ name, family string }{{"spec-vector", "Webhook-"}, {"svix-invoice-paid", "Svix-"}} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := samples.LoadSample(samplesDir, "standardwebhooks", tt.name)
			if err != nil {
				t.Fatal(err)
			}
			req := s.Request()
			wantTS, wantSig := req.Header.Get(tt.family+"Timestamp"), req.Header.Get(tt.family+"Signature")
			req.Header.Del(tt.family + "Timestamp")
			req.Header.Del(tt.family + "Signature")
			if err := (Provider{}).Sign(req, s.TenantConfig, s.Time()); err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			if ts, sig := req.Header.Get(tt.family+"Timestamp"), req.Header.Get(tt.family+"Signature"); ts != wantTS || sig != wantSig {
				t.Errorf("Sign(%s) = %s, %s; want %s, %s", tt.name, ts, sig, wantTS, wantSig)
			}
		})
	}
	req := &webhook.Request{Header: http.Header{"Webhook-Id": {docID}}, Body: []byte(docBody)}
	if err := (Provider{}).Sign(req, webhook.Config{Secrets: []string{docSecret}}, docAt); err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("Webhook-Signature"); got != docSig {
		t.Errorf("Sign(spec vector) = %q, want %q", got, docSig)
	}
}
