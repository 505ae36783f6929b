package twitch

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const follow = `{"subscription":{"id":"f1c2","type":"channel.follow","version":"2","condition":{"broadcaster_user_id":"1337"}},"event":{"user_id":"1234","broadcaster_user_id":"1337","followed_at":"2020-07-15T18:16:11.17106713Z"}}`

func message(id, typ, body string) func() *webhook.Request {
	return func() *webhook.Request {
		return providertest.Request(map[string]string{"Content-Type": "application/json", IDHeader: id, TypeHeader: typ, RetryHeader: "0"}, body)
	}
}

func TestContract(t *testing.T) {
	headers := []string{SignatureHeader, TimestampHeader}
	providertest.Run(t, providertest.Case{
		Provider:   Provider{},
		Request:    message("m-1", "notification", follow),
		Signature:  SignatureHeader,
		Retries:    &Retries,
		OtherEvent: providertest.Header(IDHeader, "m-2"),
		// Twitch resends a notification not answered 2xx "with the same
		// message ID" and Twitch-Eventsub-Message-Retry raised, signed at the
		// new send time (https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#handling-duplicate-events).
		Retry:    providertest.Header(RetryHeader, "1"),
		Reused:   providertest.Replace(`"1234"`, `"4321"`),
		Unsigned: []string{RetryHeader, TypeHeader, "Twitch-Eventsub-Subscription-Type"},
		Vectors: []providertest.Vector{
			providertest.SampleVector(t, "twitch", "channel-follow", headers...),
			providertest.SampleVector(t, "twitch", "verification", headers...),
		},
		Tampers: []providertest.Change{
			{Name: "message id changed", Apply: providertest.Header(IDHeader, "m-9")},
			{Name: "timestamp moved", Apply: providertest.Header(TimestampHeader, "2023-11-14T22:13:21Z")},
			{Name: "timestamp not RFC 3339", Apply: providertest.Header(TimestampHeader, "1700000000"), Want: webhook.ErrMissingSignature},
			{Name: "message id removed", Apply: providertest.Header(IDHeader, ""), Want: webhook.ErrMissingSignature},
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: providertest.Body("{")},
			{Name: "not an object", Apply: providertest.Body("[]")},
		},
		Handshakes: []providertest.Handshake{
			{Name: "webhook_callback_verification", Signed: true, OK: true,
				Request: message("m-v", "webhook_callback_verification", `{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"type":"channel.follow"}}`),
				Reply:   webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Body: "pogchamp-kappa-360noscope-vohiyo"}},
			{Name: "verification without challenge", Signed: true, OK: true, Err: webhook.ErrMalformed,
				Request: message("m-w", "webhook_callback_verification", `{"subscription":{}}`)},
			{Name: "revocation is queued", Signed: true, Request: message("m-r", "revocation", `{"subscription":{"type":"channel.follow","status":"authorization_revoked"}}`)},
		},
	})
}

func TestEvents(t *testing.T) {
	tests := []struct{ name, typ, body, wantType, wantConv string }{
		{"notification", "notification", follow, "channel.follow", "broadcaster:1337"},
		{"raid", "notification", `{"subscription":{"type":"channel.raid"},"event":{"to_broadcaster_user_id":"9"}}`, "channel.raid", "broadcaster:9"},
		{"revocation", "revocation", `{"subscription":{"type":"channel.follow","condition":{"broadcaster_user_id":"1337"}}}`, "revocation:channel.follow", "broadcaster:1337"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			providertest.WantEvent(t, Provider{}, message("m-1", tt.typ, tt.body)(), webhook.Config{}, webhook.Event{ID: "m-1", Type: tt.wantType, Conversation: tt.wantConv})
		})
	}
}

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		secrets []string
		want    string
	}{{nil, "secrets"}, {[]string{"short"}, "secrets[0]"}, {[]string{"long-enough-secret"}, ""}} {
		err := Provider{}.Check(webhook.Config{Secrets: tt.secrets})
		if tt.want == "" && err != nil || tt.want != "" && (!errors.Is(err, webhook.ErrMisconfigured) || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Check(%d secrets) = %v, want %q", len(tt.secrets), err, tt.want)
		}
	}
}
