package dropbox

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const notification = `{"list_folder": {"accounts": ["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]}, "delta": {"users": [12345678]}}`

func get(query string) func() *webhook.Request {
	return func() *webhook.Request {
		q, _ := url.ParseQuery(query)
		return &webhook.Request{Method: http.MethodGet, Header: http.Header{}, Query: q}
	}
}

func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Case{
		Provider:   Provider{},
		Request:    providertest.JSON(notification),
		Signature:  SignatureHeader,
		OtherEvent: providertest.Replace("12345678", "87654321"),
		// Dropbox retries a notification that is not answered within 10
		// seconds or not 2xx, with exponential back-off, sending the same
		// body (https://www.dropbox.com/developers/reference/webhooks#notifications).
		Retry: providertest.Resent,
		Vectors: []providertest.Vector{
			providertest.SampleVector(t, "dropbox", "list-folder", SignatureHeader),
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: providertest.Body("{")},
			{Name: "not an object", Apply: providertest.Body("[]")},
		},
		Handshakes: []providertest.Handshake{
			{Name: "verification GET", OK: true, Request: get("challenge=b9f7a8c2e1d04f6a"),
				Reply: webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Body: "b9f7a8c2e1d04f6a", Headers: map[string]string{"x-content-type-options": "nosniff"}}},
			{Name: "GET without challenge", OK: true, Err: webhook.ErrMalformed, Request: get("")},
		},
	})
}

func TestEvents(t *testing.T) {
	tests := []struct{ name, body, wantConv string }{
		{"one account", notification, "account:dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"},
		{"several accounts", `{"list_folder":{"accounts":["dbid:a","dbid:b"]}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			providertest.WantEvent(t, Provider{}, providertest.Request(nil, tt.body), webhook.Config{}, webhook.Event{Type: "list_folder", Conversation: tt.wantConv})
		})
	}
}

func TestCheck(t *testing.T) {
	providertest.Misconfigured(t, Provider{}, webhook.Config{}, "secrets")
}
