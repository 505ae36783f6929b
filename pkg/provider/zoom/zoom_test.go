package zoom

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const started = `{"event":"meeting.started","event_ts":1626230691572,"payload":{"account_id":"A1","object":{"id":"1234567890","uuid":"4444AAAiAAAAAiAiAiiAii==","topic":"My Meeting"}}}`

// encrypted is Zoom's encryptedToken, computed as its docs say:
// HMAC-SHA256 with the secret token over plainToken, hex.
func encrypted(secret, plain string) string {
	return hex.EncodeToString(providertest.MAC(sha256.New, secret, plain))
}

func TestContract(t *testing.T) {
	headers := []string{SignatureHeader, TimestampHeader}
	const validation = `{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`
	providertest.Run(t, providertest.Case{
		Provider:   Provider{},
		Request:    providertest.JSON(started),
		Signature:  SignatureHeader,
		Retries:    &Retries,
		OtherEvent: providertest.Replace("1626230691572", "1626230691573"),
		// Zoom retries a notification not answered 200/204 within 3
		// seconds three times (after 5, 30 and 90 minutes) with the same
		// payload, signed again
		// (https://developers.zoom.us/docs/api/webhooks/#notification-delivery).
		Retry: providertest.Resent,
		Vectors: []providertest.Vector{
			providertest.SampleVector(t, "zoom", "meeting-started", headers...),
			providertest.SampleVector(t, "zoom", "url-validation", headers...),
		},
		Tampers: []providertest.Change{
			{Name: "timestamp moved", Apply: providertest.Header(TimestampHeader, "1700000001")},
			{Name: "timestamp removed", Apply: providertest.Header(TimestampHeader, ""), Want: webhook.ErrMissingSignature},
			{Name: "other version", Apply: func(r *webhook.Request) { r.Header.Set(SignatureHeader, "v1="+r.Header.Get(SignatureHeader)[3:]) }},
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: providertest.Body("{")},
			{Name: "not an object", Apply: providertest.Body(`"x"`)},
		},
		Handshakes: []providertest.Handshake{
			{Name: "endpoint.url_validation", Signed: true, OK: true, Request: providertest.JSON(validation),
				Reply: webhook.Reply{Status: http.StatusOK, ContentType: "application/json",
					Body: `{"encryptedToken":"` + encrypted("suite-secret-one", "qgg8vlvZRS6UYooatFL8Aw") + `","plainToken":"qgg8vlvZRS6UYooatFL8Aw"}`}},
			{Name: "validation without plainToken", Signed: true, OK: true, Err: webhook.ErrMalformed,
				Request: providertest.JSON(`{"payload":{},"event":"endpoint.url_validation"}`)},
			{Name: "GET", Request: func() *webhook.Request { r := providertest.JSON("")(); r.Method = http.MethodGet; return r }},
		},
	})
}

func TestEvents(t *testing.T) {
	tests := []struct{ name, body, wantType, wantConv string }{
		{"meeting", started, "meeting.started", "meeting:4444AAAiAAAAAiAiAiiAii=="},
		{"recording", `{"event":"recording.completed","payload":{"object":{"id":7,"uuid":"U7"}}}`, "recording.completed", "recording:U7"},
		{"user without uuid", `{"event":"user.updated","payload":{"object":{"id":"u1"}}}`, "user.updated", "user:u1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			providertest.WantEvent(t, Provider{}, providertest.JSON(tt.body)(), webhook.Config{}, webhook.Event{Type: tt.wantType, Conversation: tt.wantConv})
		})
	}
}

func TestCheck(t *testing.T) {
	providertest.Misconfigured(t, Provider{}, webhook.Config{}, "secrets")
	providertest.Misconfigured(t, Provider{}, webhook.Config{Secrets: []string{"s"}, Settings: map[string]string{"tolerance": "x"}})
}
