package whatsapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonkeys"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// The types and functions below are Events as it was when it decoded the
// body with encoding/json; FuzzEventsMatchLegacy holds the single-pass
// Events to it.
type legacyPayload struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string          `json:"field"`
			Value json.RawMessage `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

type legacyValue struct {
	Metadata json.RawMessage   `json:"metadata"`
	Contacts []json.RawMessage `json:"contacts"`
	Messages []json.RawMessage `json:"messages"`
	Statuses []json.RawMessage `json:"statuses"`
}

type legacyMetadata struct {
	PhoneNumberID string `json:"phone_number_id"`
}

type legacyItem struct {
	ID          string `json:"id"`
	From        string `json:"from"`
	Type        string `json:"type"`
	Status      string `json:"status"`
	RecipientID string `json:"recipient_id"`
	WaID        string `json:"wa_id"`
}

// messageBody, statusBody and changeBody are the per-event bodies handed to
// the worker.
type legacyMessageBody struct {
	Object   string            `json:"object,omitempty"`
	EntryID  string            `json:"entry_id,omitempty"`
	Field    string            `json:"field,omitempty"`
	Metadata json.RawMessage   `json:"metadata,omitempty"`
	Contacts []json.RawMessage `json:"contacts,omitempty"`
	Message  json.RawMessage   `json:"message"`
}

type legacyStatusBody struct {
	Object   string          `json:"object,omitempty"`
	EntryID  string          `json:"entry_id,omitempty"`
	Field    string          `json:"field,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Status   json.RawMessage `json:"status"`
}

type legacyChangeBody struct {
	Object  string          `json:"object,omitempty"`
	EntryID string          `json:"entry_id,omitempty"`
	Field   string          `json:"field,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
}

// Events splits a delivery into one event per message, per status and per
// other change, as described in the package comment. It returns an error
// wrapping webhook.ErrMalformed when the body is not a JSON object of that
// shape.
func legacyEvents(req *webhook.Request) ([]webhook.Event, error) {
	var p legacyPayload
	if err := json.Unmarshal(req.Body, &p); err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a WhatsApp notification: %v", err)
	}
	headers := map[string]string{"content-type": req.Header.Get("Content-Type")}
	var evs, others []webhook.Event
	for _, e := range p.Entry {
		for _, c := range e.Changes {
			var v legacyValue
			_ = json.Unmarshal(c.Value, &v) // a value of another shape is an "other" change
			var md legacyMetadata
			_ = json.Unmarshal(v.Metadata, &md)
			n := len(evs)
			for _, raw := range v.Messages {
				var m legacyItem
				_ = json.Unmarshal(raw, &m)
				body, err := legacyEncode(legacyMessageBody{
					Object: p.Object, EntryID: e.ID, Field: c.Field,
					Metadata: v.Metadata, Contacts: legacyContactsFor(v.Contacts, m.From), Message: raw,
				})
				if err != nil {
					return nil, err
				}
				evs = append(evs, webhook.Event{
					ID:           m.ID,
					Type:         "message." + m.Type,
					Conversation: md.PhoneNumberID + ":" + m.From,
					Body:         body,
					Headers:      headers,
				})
			}
			for _, raw := range v.Statuses {
				var s legacyItem
				_ = json.Unmarshal(raw, &s)
				body, err := legacyEncode(legacyStatusBody{
					Object: p.Object, EntryID: e.ID, Field: c.Field, Metadata: v.Metadata, Status: raw,
				})
				if err != nil {
					return nil, err
				}
				id := ""
				if s.ID != "" {
					id = s.ID + ":" + s.Status
				}
				evs = append(evs, webhook.Event{
					ID:           id,
					Type:         "status." + s.Status,
					Conversation: md.PhoneNumberID + ":" + s.RecipientID,
					Body:         body,
					Headers:      headers,
				})
			}
			if len(evs) > n {
				continue
			}
			body, err := legacyEncode(legacyChangeBody{Object: p.Object, EntryID: e.ID, Field: c.Field, Value: c.Value})
			if err != nil {
				return nil, err
			}
			others = append(others, webhook.Event{Type: c.Field, Conversation: e.ID, Body: body, Headers: headers})
		}
	}
	if len(evs) == 0 {
		ev := webhook.Event{Body: req.Body, Headers: headers}
		if len(others) > 0 {
			ev.Type, ev.Conversation = others[0].Type, others[0].Conversation
		}
		return []webhook.Event{ev}, nil
	}
	return append(evs, others...), nil
}

// contactsFor returns the contacts whose wa_id is from, or all of them when
// none matches (so the worker never loses the sender's profile).
func legacyContactsFor(contacts []json.RawMessage, from string) []json.RawMessage {
	var out []json.RawMessage
	for _, c := range contacts {
		var it legacyItem
		if json.Unmarshal(c, &it) == nil && it.WaID == from {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return contacts
	}
	return out
}

// encode marshals v without HTML escaping, so message text keeps its bytes
// ("<", "&") and escapes ("\u00e9") as Meta sent them.
func legacyEncode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "cannot split the notification: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func FuzzEventsMatchLegacy(f *testing.F) {
	for _, seed := range [][]byte{
		read(f, "message.json"), read(f, "statuses.json"),
		[]byte(`{"entry":[{"changes":[{"value":{"messages":[1,null,{"id":""}],"statuses":[{}]}}]}]}`),
		[]byte(`{"entry":[{"changes":[{"field":"x","value":null}]}]}`),
		[]byte(`{"object":"o","entry":[null,{"id":"W","changes":[null,{"field":"f"},{"value":{"messages":[]}}]}]}`),
		[]byte(` {"object" : "wh\u0061ts<&>", "entry" : [ {"id":"W1", "changes":[ {"field":"messages", "value": {"metadata": null,
			"contacts":[{"wa_id":"A","id":5}, null, {"wa_id":"A"}, 3, {"wa_id":"B"}], "messages":[ {"from":"A","id":"m1","type":7,"text":{"body":"a\u2028 b"}}, {"from":""} ],
			"statuses":[{"id":"s","status":"read","recipient_id":"A"}, [1]]}} ]} ]} `),
		[]byte(`{"entry":[{"changes":[{"value":{"metadata":{"phone_number_id":5},"messages":{"x":1},"contacts":"c","statuses":[{"id":1}]}}]}]}`),
		[]byte(`{"entry":[{"changes":[{"value":[1],"field":"f"},{"value":"v"}]}]}`),
		[]byte(`{"entry":5}`), []byte(`{"entry":[{"changes":"x"}]}`), []byte(`{"entry":[1]}`), []byte(`{"object":1}`),
		[]byte(`{"entry":[{"id":2}]}`), []byte(`{"entry":[{"changes":[{"field":[]}]}]}`), []byte(`null`), []byte(`[]`), []byte(``), []byte(`{} x`),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if json.Valid(body) && jsonkeys.Ambiguous(body) {
			t.Skip("keys where struct decoding and Scan legitimately differ")
		}
		req := post("", body)
		got, err := Provider{}.Events(req, webhook.Config{})
		want, wantErr := legacyEvents(req)
		if (err == nil) != (wantErr == nil) || err != nil && !errors.Is(err, webhook.ErrMalformed) {
			t.Fatalf("Events(%q) error = %v, legacy %v", body, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Events(%q) =\n%s\nlegacy\n%s", body, dump(got), dump(want))
		}
	})
}

func dump(evs []webhook.Event) string {
	var b bytes.Buffer
	for _, ev := range evs {
		b.WriteString(ev.ID + " | " + ev.Type + " | " + ev.Conversation + " | " + string(ev.Body) + "\n")
	}
	return b.String()
}
