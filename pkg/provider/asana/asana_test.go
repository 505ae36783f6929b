package asana

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const changed = `{"events":[{"user":{"gid":"1199","resource_type":"user"},"created_at":"2024-01-23T19:33:05.512Z","action":"changed","resource":{"gid":"1206","resource_type":"task"},"parent":null,"change":{"field":"completed","action":"changed"}}]}`

func post(body string, header map[string]string) func() *webhook.Request {
	return func() *webhook.Request {
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range header {
			h[k] = v
		}
		return providertest.Request(h, body)
	}
}

func TestContract(t *testing.T) {
	secret := func(s string) map[string]string { return map[string]string{SecretHeader: s} }
	providertest.Run(t, providertest.Case{
		Provider:   Provider{},
		Request:    post(changed, nil),
		Signature:  SignatureHeader,
		OtherEvent: providertest.Replace("19:33:05.512Z", "19:33:06.000Z"),
		// Asana retries a delivery not answered 200/204 with exponential
		// back-off for 24 hours, sending the same events
		// (https://developers.asana.com/docs/webhooks-guide#error-handling-and-retry).
		Retry: providertest.Resent,
		Vectors: []providertest.Vector{
			providertest.SampleVector(t, "asana", "task-changed", SignatureHeader),
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: providertest.Body("{")},
			{Name: "no events", Apply: providertest.Body(`{"data":[]}`)},
			{Name: "event not an object", Apply: providertest.Body(`{"events":[1]}`)},
		},
		Handshakes: []providertest.Handshake{
			{Name: "handshake with a configured secret is echoed", OK: true, Request: post("", secret("suite-secret-one")),
				Reply: webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Headers: map[string]string{"x-hook-secret": "suite-secret-one"}}},
			{Name: "handshake with another secret", OK: true, Err: webhook.ErrForbidden, Request: post("", secret("0123456789abcdef"))},
			{Name: "handshake while onboarding is queued", Request: post("", secret("0123456789abcdef")), Settings: map[string]string{"onboarding": "true"}},
			{Name: "heartbeat", Signed: true, OK: true, Request: post(`{"events":[]}`, nil), Reply: webhook.Reply{Status: http.StatusOK, ContentType: "text/plain"}},
			{Name: "GET", Request: func() *webhook.Request { r := post("", nil)(); r.Method = http.MethodGet; return r }},
		},
	})
}

// TestOnboarding: the forwarded handshake carries the secret to the tenant
// and Respond echoes it; a signed request with X-Hook-Secret is no
// handshake.
func TestOnboarding(t *testing.T) {
	cfg := webhook.Config{Settings: map[string]string{"onboarding": "true"}}
	if err := (Provider{}).Check(cfg); err != nil {
		t.Errorf("Check(onboarding) = %v", err)
	}
	providertest.Misconfigured(t, Provider{}, webhook.Config{})
	req := post("", map[string]string{SecretHeader: "new-hook-secret"})()
	if err := (Provider{}).Verify(req, cfg, providertest.Now); err != nil {
		t.Fatalf("Verify(handshake) = %v", err)
	}
	evs, err := Provider{}.Events(req, cfg)
	if err != nil || len(evs) != 1 || evs[0].Type != "handshake" || string(evs[0].Body) != `{"x-hook-secret":"new-hook-secret"}` || strings.Contains(evs[0].ID, "new-hook-secret") {
		t.Fatalf("Events(handshake) = %+v, %v", evs, err)
	}
	reply, ok := Provider{}.Respond(req, cfg, evs)
	if !ok || !reply.Equal(webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Headers: map[string]string{"x-hook-secret": "new-hook-secret"}}) {
		t.Errorf("Respond(handshake) = %+v, %v; want the secret echoed", reply, ok)
	}
	signed := post(changed, map[string]string{SecretHeader: "x"})()
	if err := (Provider{}).Sign(signed, webhook.Config{Secrets: []string{"s"}}, providertest.Now); err != nil {
		t.Fatal(err)
	}
	if _, ok := (Provider{}).Respond(signed, cfg, nil); ok {
		t.Error("Respond(a signed event carrying X-Hook-Secret) answered it as a handshake")
	}
}

func TestEvents(t *testing.T) {
	two := `{"events":[{"action":"added","resource":{"gid":"1","resource_type":"story"},"parent":{"gid":"9","resource_type":"task"}},{"action":"deleted","resource":{"gid":"2","resource_type":"task"}}]}`
	evs, err := Provider{}.Events(post(two, nil)(), webhook.Config{})
	if err != nil || len(evs) != 2 {
		t.Fatalf("Events() = %d, %v", len(evs), err)
	}
	if evs[0].Type != "story.added" || evs[0].Conversation != "story:1" || evs[1].Type != "task.deleted" || evs[1].Conversation != "task:2" {
		t.Errorf("Events() = %+v", evs)
	}
}
