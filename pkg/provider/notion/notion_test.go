package notion

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const (
	created  = `{"id":"367cba44-b6f3-4c92-81e7-6a2e9659efd4","timestamp":"2024-12-05T23:55:34.285Z","workspace_id":"w1","subscription_id":"s1","type":"page.created","attempt_number":1,"entity":{"id":"153104cd","type":"page"},"data":{"parent":{"id":"w1","type":"space"}}}`
	docToken = "secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl"
	verify   = `{"verification_token":"` + docToken + `"}`
)

func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Case{
		Provider:   Provider{},
		Request:    providertest.JSON(created),
		Signature:  SignatureHeader,
		OtherEvent: providertest.Replace("367cba44", "467cba44"),
		// Notion retries an event not answered 2xx up to 8 times over about
		// 24 hours with exponential back-off, raising attempt_number in the
		// (re-signed) body (https://developers.notion.com/reference/webhooks#event-delivery).
		Retry:  providertest.Replace(`"attempt_number":1`, `"attempt_number":2`),
		Reused: providertest.Replace(`"page.created"`, `"page.deleted"`),
		Vectors: []providertest.Vector{
			providertest.SampleVector(t, "notion", "page-created", SignatureHeader),
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: providertest.Body("{")},
			{Name: "no id", Apply: providertest.Body(`{"type":"page.created"}`)},
		},
		Handshakes: []providertest.Handshake{
			{Name: "verification with a configured token", OK: true, Request: providertest.JSON(`{"verification_token":"suite-secret-one"}`),
				Reply: webhook.Reply{Status: http.StatusOK, ContentType: "text/plain"}},
			{Name: "verification with another token", OK: true, Err: webhook.ErrForbidden, Request: providertest.JSON(verify)},
			{Name: "verification while onboarding is queued", Request: providertest.JSON(verify), Settings: map[string]string{"onboarding": "true"}},
			{Name: "signed body shaped like a verification is an event", Signed: true, Request: providertest.JSON(`{"id":"e1","type":"page.created","verification_token":"x"}`)},
		},
	})
}

// TestOnboarding: an onboarding tenant without secrets receives the token
// as an event; a verification that is not one never passes Verify.
func TestOnboarding(t *testing.T) {
	cfg := webhook.Config{Settings: map[string]string{"onboarding": "true"}}
	if err := (Provider{}).Check(cfg); err != nil {
		t.Errorf("Check(onboarding, no secrets) = %v", err)
	}
	providertest.Misconfigured(t, Provider{}, webhook.Config{}, "secrets", "onboarding")
	req := providertest.JSON(verify)()
	if err := (Provider{}).Verify(req, cfg, providertest.Now); err != nil {
		t.Fatalf("Verify(verification) = %v", err)
	}
	evs, err := Provider{}.Events(req, cfg)
	if err != nil || len(evs) != 1 || evs[0].Type != "verification" || string(evs[0].Body) != verify || strings.Contains(evs[0].ID, docToken) {
		t.Errorf("Events(verification) = %+v, %v", evs, err)
	}
	for _, body := range []string{`{"verification_token":""}`, `{"verification_token":"t","id":"x"}`, `{"verification_token":1}`} {
		if err := (Provider{}).Verify(providertest.JSON(body)(), cfg, providertest.Now); !errors.Is(err, webhook.ErrMissingSignature) {
			t.Errorf("Verify(%s) = %v, want missing signature", body, err)
		}
	}
	if _, err := (Provider{}).Events(providertest.JSON(created)(), cfg); err != nil {
		t.Errorf("Events(event) = %v", err)
	}
}
