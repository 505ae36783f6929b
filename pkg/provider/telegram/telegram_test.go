package telegram

import (
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// A text message update, in the shape of the Bot API's Update and Message
// objects (https://core.telegram.org/bots/api#update).
const update = `{"update_id":10000,"message":{"message_id":1365,"from":{"id":1111111,"is_bot":false,"first_name":"Test"},"chat":{"id":1111111,"type":"private","first_name":"Test"},"date":1441645532,"text":"/start"}}`

func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Case{
		Provider:     Provider{},
		Request:      providertest.JSON(update),
		Signature:    Header,
		BodyUnsigned: true,
		OtherEvent:   providertest.Replace("10000", "10001"),
		// Telegram sends an update again, unchanged, until the webhook
		// answers 2xx ("In case of an unsuccessful request, we will give up
		// after a reasonable amount of attempts", https://core.telegram.org/bots/api#setwebhook).
		Retry:  providertest.Resent,
		Reused: providertest.Replace("/start", "/stop"),
		Vectors: []providertest.Vector{
			providertest.SampleVector(t, "telegram", "message-text", Header),
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: providertest.Body("{")},
			{Name: "no update_id", Apply: providertest.Body(`{"message":{"chat":{"id":1}}}`)},
			{Name: "update_id an object", Apply: providertest.Body(`{"update_id":{"a":1}}`)},
		},
	})
}

func TestEvents(t *testing.T) {
	tests := []struct{ name, body, wantID, wantType, wantConv string }{
		{"message", update, "update:10000", "message", "chat:1111111"},
		{"callback query", `{"update_id":7,"callback_query":{"id":"4382","from":{"id":9},"message":{"message_id":5,"chat":{"id":-100}},"data":"yes"}}`, "update:7", "callback_query", "chat:-100"},
		{"inline query", `{"update_id":8,"inline_query":{"id":"1","from":{"id":9},"query":"x"}}`, "update:8", "inline_query", "chat:9"},
		{"poll has no chat", `{"update_id":9,"poll":{"id":"p","question":"?"}}`, "update:9", "poll", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			providertest.WantEvent(t, Provider{}, providertest.Request(nil, tt.body), webhook.Config{}, webhook.Event{ID: tt.wantID, Type: tt.wantType, Conversation: tt.wantConv})
		})
	}
}

func TestCheck(t *testing.T) {
	providertest.Misconfigured(t, Provider{}, webhook.Config{}, "secrets")
	providertest.Misconfigured(t, Provider{}, webhook.Config{Secrets: []string{"ok_token-1", "not ok!"}}, "secrets[1]")
	if err := (Provider{}).Check(webhook.Config{Secrets: []string{"ok_token-1"}}); err != nil {
		t.Errorf("Check(valid) = %v", err)
	}
}
