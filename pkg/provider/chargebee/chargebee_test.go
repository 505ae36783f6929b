package chargebee

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// A subscription_created event in the shape of Chargebee's Event resource
// (https://apidocs.chargebee.com/docs/api/events), trimmed.
const event = `{"id":"ev_16BPgETyVrQbiGhA","occurred_at":1702645601,"source":"admin","object":"event","api_version":"v2","content":{"subscription":{"id":"16BPgETyVrQVHGh1","customer_id":"16BPgETyVrQVHGh1","status":"active"},"customer":{"id":"16BPgETyVrQVHGh1"}},"event_type":"subscription_created","webhook_status":"scheduled"}`

func TestContract(t *testing.T) {
	body := func(b string) func(*webhook.Request) { return func(r *webhook.Request) { r.Body = []byte(b) } }
	providertest.Run(t, providertest.Case{
		Provider: Provider{},
		Request: func() *webhook.Request {
			return providertest.Request(map[string]string{"Content-Type": "application/json"}, event)
		},
		Secrets:      [3]string{"hooks:suite-password-one", "hooks:suite-password-two", "other:suite-password-three"},
		Signature:    "Authorization",
		BodyUnsigned: true,
		OtherEvent:   body(strings.Replace(event, "ev_16BPgETyVrQbiGhA", "ev_16BPgETyVrQbiGhB", 1)),
		// Chargebee retries a failed webhook with exponential back-off for
		// up to 3 days, sending the same event (same id) again
		// (https://www.chargebee.com/docs/billing/2.0/site-configuration/events_and_webhooks#webhooks);
		// the event's delivery status is re-rendered.
		Retry:  body(strings.Replace(event, `"webhook_status":"scheduled"`, `"webhook_status":"re_scheduled"`, 1)),
		Reused: body(strings.Replace(event, `"status":"active"`, `"status":"cancelled"`, 1)),
		Vectors: []providertest.Vector{
			providertest.SampleVector(t, "chargebee", "subscription-created", "Authorization"),
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: body("{")},
			{Name: "no id", Apply: body(`{"event_type":"x"}`)},
		},
	})
}

func TestEvents(t *testing.T) {
	tests := []struct{ name, body, wantType, wantConv string }{
		{"subscription", event, "subscription_created", "subscription:16BPgETyVrQVHGh1"},
		{"customer", `{"id":"ev_2","event_type":"customer_changed","content":{"customer":{"id":"c1"}}}`, "customer_changed", "customer:c1"},
		{"invoice", `{"id":"ev_3","event_type":"invoice_generated","content":{"invoice":{"id":"i1"}}}`, "invoice_generated", "invoice:i1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := Provider{}.Events(providertest.Request(nil, tt.body), webhook.Config{})
			if err != nil || len(evs) != 1 {
				t.Fatalf("Events() = %d events, %v", len(evs), err)
			}
			if ev := evs[0]; ev.Type != tt.wantType || ev.Conversation != tt.wantConv {
				t.Errorf("Events() = type %q conv %q; want %q %q", ev.Type, ev.Conversation, tt.wantType, tt.wantConv)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	if err := (Provider{}).Check(webhook.Config{Secrets: []string{"nopassword"}}); !errors.Is(err, webhook.ErrMisconfigured) || !strings.Contains(err.Error(), "secrets[0]") {
		t.Errorf("Check(no colon) = %v, want ErrMisconfigured naming secrets[0]", err)
	}
}
