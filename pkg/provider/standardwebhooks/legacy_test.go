package standardwebhooks

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// legacyEvents is Events as it was when it decoded the body into a generic
// document (webhook.DecodeJSON, a json.Decoder) and read it with
// webhook.Field; FuzzEventsMatchLegacy holds the single-pass Events to it.
func legacyEvents(req *webhook.Request, cfg webhook.Config) ([]webhook.Event, error) {
	id := header(req, "Id")
	if id == "" {
		return nil, webhook.Errorf(webhook.ErrMalformed, "webhook-id header is required")
	}
	ev := webhook.Event{
		ID: id, Conversation: id, Body: req.Body,
		Headers: map[string]string{
			"content-type":      req.Header.Get("Content-Type"),
			"webhook-id":        id,
			"webhook-timestamp": header(req, "Timestamp"),
		},
	}
	if doc, err := webhook.DecodeJSON(req.Body); err == nil {
		if v, ok := webhook.Field(doc, cfg.Setting("type", "type")); ok {
			ev.Type = v
		}
		if p := cfg.Settings["conversation"]; p != "" {
			if v, ok := webhook.Field(doc, p); ok && v != "" {
				ev.Conversation = v
			}
		}
	}
	return []webhook.Event{ev}, nil
}

func FuzzEventsMatchLegacy(f *testing.F) {
	for _, seed := range []string{
		`{"type":"invoice.paid","data":{"customer_id":"cus_1","n":[1,{"x":"<"}]}}`, `{"test": 2432232314}`,
		`{"type":{"b":1,"a":2},"data":{"customer_id":""}}`, `{"type":null}`, `[{"type":"x"}]`, `not json`, `{"type":"t"} x`, ``,
	} {
		f.Add("", "data.customer_id", []byte(seed))
		f.Add("data.n.1", "data.n", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, typ, conv string, body []byte) {
		req := &webhook.Request{Method: http.MethodPost, Header: http.Header{"Webhook-Id": {"msg_1"}, "Webhook-Timestamp": {"1"}}, Body: body}
		cfg := webhook.Config{Settings: map[string]string{"type": typ, "conversation": conv}}
		got, err := Provider{}.Events(req, cfg)
		want, wantErr := legacyEvents(req, cfg)
		if err != nil || wantErr != nil {
			t.Fatalf("Events(%q) = %v, legacy %v", body, err, wantErr)
		}
		if !json.Valid(body) {
			// json.Decoder read a first value that Scan, rejecting what
			// follows it, treats as not JSON: no type, the id as conversation.
			want[0].Type, want[0].Conversation = "", want[0].ID
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Events(%q) = %+v, legacy %+v", body, got, want)
		}
	})
}
