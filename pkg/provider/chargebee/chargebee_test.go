package chargebee

import (
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// A subscription_created event in the shape of Chargebee's Event resource
// (https://apidocs.chargebee.com/docs/api/events), trimmed.
const event = `{"id":"ev_16BPgETyVrQbiGhA","occurred_at":1702645601,"source":"admin","object":"event","api_version":"v2","content":{"subscription":{"id":"16BPgETyVrQVHGh1","customer_id":"16BPgETyVrQVHGh1","status":"active"},"customer":{"id":"16BPgETyVrQVHGh1"}},"event_type":"subscription_created","webhook_status":"scheduled"}`

func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Case{
		Provider:     Provider{},
		Request:      providertest.JSON(event),
		Secrets:      providertest.BasicAuthSecrets,
		Signature:    "Authorization",
		BodyUnsigned: true,
		OtherEvent:   providertest.Replace("ev_16BPgETyVrQbiGhA", "ev_16BPgETyVrQbiGhB"),
		// Chargebee retries a failed webhook with exponential back-off for
		// up to 3 days, sending the same event (same id) again
		// (https://www.chargebee.com/docs/billing/2.0/site-configuration/events_and_webhooks#webhooks);
		// the event's delivery status is re-rendered.
		Retry:  providertest.Replace(`"webhook_status":"scheduled"`, `"webhook_status":"re_scheduled"`),
		Reused: providertest.Replace(`"status":"active"`, `"status":"cancelled"`),
		Vectors: []providertest.Vector{
			providertest.SampleVector(t, "chargebee", "subscription-created", "Authorization"),
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: providertest.Body("{")},
			{Name: "no id", Apply: providertest.Body(`{"event_type":"x"}`)},
		},
	})
}

func TestEvents(t *testing.T) {
	tests := []struct{ name, body, wantID, wantType, wantConv string }{
		{"subscription", event, "ev_16BPgETyVrQbiGhA", "subscription_created", "subscription:16BPgETyVrQVHGh1"},
		{"customer", `{"id":"ev_2","event_type":"customer_changed","content":{"customer":{"id":"c1"}}}`, "ev_2", "customer_changed", "customer:c1"},
		{"invoice", `{"id":"ev_3","event_type":"invoice_generated","content":{"invoice":{"id":"i1"}}}`, "ev_3", "invoice_generated", "invoice:i1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			providertest.WantEvent(t, Provider{}, providertest.Request(nil, tt.body), webhook.Config{}, webhook.Event{ID: tt.wantID, Type: tt.wantType, Conversation: tt.wantConv})
		})
	}
}

func TestCheck(t *testing.T) {
	providertest.Misconfigured(t, Provider{}, webhook.Config{Secrets: []string{"nopassword"}}, "secrets[0]")
}
