package stripe

import (
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const samplesDir = "../../../events/samples"

func TestSignVerifies(t *testing.T) {
	now := time.Unix(1700000000, 0)
	signing := webhook.Config{Secrets: []string{"whsec_new", "whsec_old"}}
	tests := []struct {
		name   string
		tamper func(*webhook.Request)
		verify webhook.Config
		at     time.Time
		want   error
	}{
		{"round trip", nil, signing, now, nil},
		{"within the tolerance", nil, signing, now.Add(300 * time.Second), nil},
		{"stale", nil, signing, now.Add(301 * time.Second), webhook.ErrStale},
		{"verifier lists the signing secret second", nil, webhook.Config{Secrets: []string{"whsec_other", "whsec_new"}}, now, nil},
		{"signs with the first secret, not the second", nil, webhook.Config{Secrets: []string{"whsec_old"}}, now, webhook.ErrInvalidSignature},
		{"tampered body", func(r *webhook.Request) { r.Body = append(r.Body, ' ') }, signing, now, webhook.ErrInvalidSignature},
		{"timestamp moved", func(r *webhook.Request) {
			r.Header.Set("Stripe-Signature", strings.Replace(r.Header.Get("Stripe-Signature"), "t=1700000000", "t=1700000001", 1))
		}, signing, now, webhook.ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("Stripe-Signature", "t=1,v1=00,v0=00") // replaced, not appended to
			req := &webhook.Request{Method: http.MethodPost, Header: h, Body: []byte(`{"id":"evt_1","type":"invoice.paid"}`)}
			if err := (Provider{}).Sign(req, signing, now); err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			if tt.tamper != nil {
				tt.tamper(req)
			}
			err := Provider{}.Verify(req, tt.verify, tt.at)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q) = %v, want %v", req.Header.Get("Stripe-Signature"), err, tt.want)
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

// TestSignReproducesSample signs the stripe-dotnet fixture at its t= with
// its secret: the timestamp and v1 must be the SDK test's (the legacy v0 is
// not produced).
func TestSignReproducesSample(t *testing.T) {
	s, err := samples.LoadSample(samplesDir, "stripe", "customer-created")
	if err != nil {
		t.Fatal(err)
	}
	req := s.Request()
	published, err := parseHeader(req.Header.Get("Stripe-Signature"))
	if err != nil || len(published.v1) != 1 {
		t.Fatalf("sample Stripe-Signature = %+v, %v; want one v1", published, err)
	}
	req.Header.Del("Stripe-Signature")
	if err := (Provider{}).Sign(req, s.TenantConfig, s.Time()); err != nil {
		t.Fatalf("Sign() = %v", err)
	}
	want := "t=" + published.timestamp + ",v1=" + hex.EncodeToString(published.v1[0])
	if got := req.Header.Get("Stripe-Signature"); got != want {
		t.Errorf("Sign(sample) = %q, want %q", got, want)
	}
	if want != "t=1533204620,v1="+docV1 {
		t.Errorf("sample signature %q is not the SDK vector v1=%s", want, docV1)
	}
}
