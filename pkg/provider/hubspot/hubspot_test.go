package hubspot

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const (
	hookURL = "https://hooks.example.com/webhooks/acme/hubspot"
	batch   = `[{"eventId":1,"subscriptionId":12345,"portalId":62515,"appId":54321,"occurredAt":1564113600000,"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":123,"propertyName":"email","propertyValue":"a@example.com","changeSource":"CRM"}]`
)

func post(body string) func() *webhook.Request {
	return func() *webhook.Request {
		r := providertest.Request(map[string]string{"Content-Type": "application/json"}, body)
		r.URL = hookURL
		return r
	}
}

func TestContract(t *testing.T) {
	headers := []string{SignatureHeader, TimestampHeader}
	providertest.Run(t, providertest.Case{
		Provider:   Provider{},
		Request:    post(batch),
		Signature:  SignatureHeader,
		Retries:    &Retries,
		OtherEvent: providertest.Replace(`"a@example.com"`, `"b@example.com"`),
		// HubSpot retries a notification batch up to 10 times over 24
		// hours, incrementing each notification's attemptNumber, and signs
		// each attempt with a new timestamp
		// (https://developers.hubspot.com/docs/api/webhooks#retries).
		Retry: providertest.Replace(`"attemptNumber":0`, `"attemptNumber":1`),
		Vectors: []providertest.Vector{
			// Signed by @hubspot/api-client (Signature.getSignature, v3).
			providertest.SampleVector(t, "hubspot", "contact-creation", headers...),
		},
		Tampers: []providertest.Change{
			{Name: "other URL", Apply: func(r *webhook.Request) { r.URL = "https://hooks.example.com/webhooks/evil/hubspot" }},
			{Name: "other method", Apply: func(r *webhook.Request) { r.Method = "PUT" }},
			{Name: "timestamp moved", Apply: providertest.Header(TimestampHeader, "1700000000001")},
			{Name: "timestamp in seconds", Apply: providertest.Header(TimestampHeader, "x"), Want: webhook.ErrMissingSignature},
		},
		Malformed: []providertest.Change{
			{Name: "object, not a batch", Apply: providertest.Body(`{"eventId":1}`)},
			{Name: "empty batch", Apply: providertest.Body(`[]`)},
			{Name: "item not an object", Apply: providertest.Body(`[1]`)},
		},
	})
}

// TestURIDecoding: HubSpot signs the URI with the characters its docs list
// decoded, so a query with %3A verifies under the signature of ":".
func TestURIDecoding(t *testing.T) {
	cfg := webhook.Config{Secrets: []string{"secret"}}
	r := post(batch)()
	r.URL = "https://hooks.example.com/webhooks/acme/hubspot?since=2024-01-01T00:00:00Z"
	if err := (Provider{}).Sign(r, cfg, providertest.Now); err != nil {
		t.Fatal(err)
	}
	r.URL = "https://hooks.example.com/webhooks/acme/hubspot?since=2024-01-01T00%3A00%3A00Z"
	if err := (Provider{}).Verify(r, cfg, providertest.Now); err != nil {
		t.Errorf("Verify(encoded colons) = %v, want nil", err)
	}
	r.URL = "https://hooks.example.com/webhooks/acme/hubspot?since=2024-01-01T00%2500%3A00Z"
	if err := (Provider{}).Verify(r, cfg, providertest.Now); !errors.Is(err, webhook.ErrInvalidSignature) {
		t.Errorf("Verify(other encoding) = %v, want %v", err, webhook.ErrInvalidSignature)
	}
}

func TestBaseURL(t *testing.T) {
	signedFor := webhook.Config{Secrets: []string{"s"}}
	r := post(batch)()
	r.URL = "https://hooks.example.com/webhooks/acme/hubspot"
	if err := (Provider{}).Sign(r, signedFor, providertest.Now); err != nil {
		t.Fatal(err)
	}
	r.URL = "https://abc.execute-api.us-east-1.amazonaws.com/webhooks/acme/hubspot"
	if err := (Provider{}).Verify(r, signedFor, providertest.Now); !errors.Is(err, webhook.ErrInvalidSignature) {
		t.Errorf("Verify(API Gateway host) = %v, want invalid", err)
	}
	custom := webhook.Config{Secrets: []string{"s"}, Settings: map[string]string{"base_url": "https://hooks.example.com"}}
	if err := (Provider{}).Verify(r, custom, providertest.Now); err != nil {
		t.Errorf("Verify(base_url) = %v, want nil", err)
	}
	bad := webhook.Config{Secrets: []string{"s"}, Settings: map[string]string{"base_url": "ftp://x"}}
	providertest.Misconfigured(t, Provider{}, bad)
	if err := (Provider{}).Check(webhook.Config{}); err == nil || !strings.Contains(err.Error(), "secrets") {
		t.Errorf("Check(nothing) = %v", err)
	}
}

func TestEvents(t *testing.T) {
	s, err := providertest.LoadSample(providertest.SamplesDir(), "hubspot", "contact-creation")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := Provider{}.Events(s.Request(), webhook.Config{})
	if err != nil || len(evs) != 2 {
		t.Fatalf("Events() = %d events, %v; want 2", len(evs), err)
	}
	for i, want := range []string{"contact.creation", "contact.propertyChange"} {
		if evs[i].Type != want || evs[i].Conversation != "62515:contact:123" {
			t.Errorf("event %d = type %q conv %q", i, evs[i].Type, evs[i].Conversation)
		}
	}
	if webhook.DedupID(evs[0]) == webhook.DedupID(evs[1]) {
		t.Error("two notifications share a key")
	}
}
