package postmark

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Postmark's bounce webhook example (https://postmarkapp.com/developer/webhooks/bounce-webhook), trimmed.
const bounce = `{"RecordType":"Bounce","MessageStream":"outbound","ID":4323372036854775807,"Type":"HardBounce","TypeCode":1,"Name":"Hard bounce","Tag":"Test","MessageID":"883953f4-6105-42a2-a16a-77a8eac79483","ServerID":23,"Description":"The server was unable to deliver your message (ex: unknown user, mailbox not found).","Email":"john@example.com","From":"sender@example.com","BouncedAt":"2019-11-05T16:33:54.9070259Z"}`

func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Case{
		Provider:     Provider{},
		Request:      providertest.JSON(bounce),
		Secrets:      providertest.BasicAuthSecrets,
		Signature:    "Authorization",
		BodyUnsigned: true,
		OtherEvent:   providertest.Replace("HardBounce", "SoftBounce"),
		// Postmark posts the same payload again until it gets a 200 (a 403
		// stops it): 10 retries over about 10.5 hours
		// (https://postmarkapp.com/support/article/understanding-inbound-webhook-retries-in-postmark).
		Retry: providertest.Resent,
		Vectors: []providertest.Vector{
			providertest.SampleVector(t, "postmark", "bounce", "Authorization"),
		},
		Tampers: []providertest.Change{
			{Name: "bearer", Apply: providertest.Header("Authorization", "Bearer x")},
			{Name: "other password", Apply: func(r *webhook.Request) { webhook.SetBasicAuth(r, "hooks:suite-password-ONE") }},
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: providertest.Body("{")},
			{Name: "not an object", Apply: providertest.Body("[]")},
		},
	})
}

func TestEvents(t *testing.T) {
	tests := []struct{ name, body, wantType, wantConv string }{
		{"bounce", bounce, "Bounce", "message:883953f4-6105-42a2-a16a-77a8eac79483"},
		{"delivery", `{"RecordType":"Delivery","MessageID":"m1","Recipient":"a@example.com"}`, "Delivery", "message:m1"},
		{"inbound", `{"From":"a@example.com","MessageID":"i1","Subject":"hi"}`, "Inbound", "message:i1"},
		{"no message", `{"RecordType":"SubscriptionChange"}`, "SubscriptionChange", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// No signed id: the key is the content hash.
			providertest.WantEvent(t, Provider{}, providertest.Request(nil, tt.body), webhook.Config{}, webhook.Event{Type: tt.wantType, Conversation: tt.wantConv})
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		want    string
	}{
		{"none", nil, "secrets"},
		{"no user", []string{"hooks:pw", "password-only"}, "secrets[1]"},
		{"credentials", []string{"hooks:pw"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Provider{}.Check(webhook.Config{Secrets: tt.secrets})
			if tt.want == "" && err != nil || tt.want != "" && (!errors.Is(err, webhook.ErrMisconfigured) || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Check(%d secrets) = %v, want %q", len(tt.secrets), err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "password-only") {
				t.Errorf("Check() error %q shows a secret", err)
			}
		})
	}
}
