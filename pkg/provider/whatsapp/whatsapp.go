// Package whatsapp verifies and parses Meta WhatsApp Cloud API webhooks
// (X-Hub-Signature-256 over the raw body) and answers Meta's verification
// handshake. One POST may batch several messages and statuses; each becomes
// its own event. docs/providers/whatsapp.md describes the events, ids,
// conversations and settings.
package whatsapp

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"net/http"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Provider implements webhook.Provider and webhook.Handshaker for the
// WhatsApp Cloud API; Verify and Sign (of POSTs; the GET handshake is
// unsigned) are webhook.HubSignature's.
type Provider struct{ webhook.HubSignature }

// Handshake answers Meta's GET verification request. ok is false for every
// other request. It returns an error wrapping webhook.ErrForbidden when the
// mode is not "subscribe" or the token is wrong, webhook.ErrMalformed when
// the challenge is missing, and webhook.ErrMisconfigured when the tenant has
// no "verify_token" setting.
func (Provider) Handshake(req *webhook.Request, cfg webhook.Config) (webhook.Reply, bool, error) {
	if req.Method != http.MethodGet || req.Query.Get("hub.mode") == "" {
		return webhook.Reply{}, false, nil
	}
	if req.Query.Get("hub.mode") != "subscribe" {
		return webhook.Reply{}, true, webhook.Errorf(webhook.ErrForbidden, "hub.mode must be subscribe")
	}
	want := cfg.Settings["verify_token"]
	if want == "" {
		return webhook.Reply{}, true, webhook.Errorf(webhook.ErrMisconfigured, "whatsapp: setting \"verify_token\" is required")
	}
	if subtle.ConstantTimeCompare([]byte(req.Query.Get("hub.verify_token")), []byte(want)) != 1 {
		return webhook.Reply{}, true, webhook.Errorf(webhook.ErrForbidden, "hub.verify_token does not match")
	}
	challenge := req.Query.Get("hub.challenge")
	if challenge == "" {
		return webhook.Reply{}, true, webhook.Errorf(webhook.ErrMalformed, "hub.challenge is required")
	}
	return webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Body: challenge}, true, nil
}

// payload is a notification as far as Events reads it. A member of the
// wrong type at this level makes the delivery malformed; inside a change's
// value (decoded separately) it is ignored.
type payload struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string          `json:"field"`
			Value json.RawMessage `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

type value struct {
	Metadata json.RawMessage   `json:"metadata"`
	Contacts []json.RawMessage `json:"contacts"`
	Messages []json.RawMessage `json:"messages"`
	Statuses []json.RawMessage `json:"statuses"`
}

// item holds the members read from a message, status or contact.
type item struct {
	ID          string `json:"id"`
	From        string `json:"from"`
	Type        string `json:"type"`
	Status      string `json:"status"`
	RecipientID string `json:"recipient_id"`
	WaID        string `json:"wa_id"`
}

// The per-event bodies handed to the worker. Empty members are left out;
// the raw members are copied as Meta sent them, minus insignificant white
// space, so message text keeps its escapes ("\u00e9").
type (
	// origin says where in the notification an event came from.
	origin struct {
		Object  string `json:"object,omitempty"`
		EntryID string `json:"entry_id,omitempty"`
		Field   string `json:"field,omitempty"`
	}
	messageBody struct {
		origin
		Metadata json.RawMessage   `json:"metadata,omitempty"`
		Contacts []json.RawMessage `json:"contacts,omitempty"`
		Message  json.RawMessage   `json:"message"`
	}
	statusBody struct {
		origin
		Metadata json.RawMessage `json:"metadata,omitempty"`
		Status   json.RawMessage `json:"status"`
	}
	changeBody struct {
		origin
		Value json.RawMessage `json:"value,omitempty"`
	}
)

// Events splits a delivery into one event per message, per status and per
// other change, as described in the package comment. It returns an error
// wrapping webhook.ErrMalformed when the body is not a JSON object of that
// shape.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	var p payload
	if err := json.Unmarshal(req.Body, &p); err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a WhatsApp notification: %v", err)
	}
	headers := map[string]string{"content-type": req.Header.Get("Content-Type")}
	var evs, others []webhook.Event
	for _, e := range p.Entry {
		for _, c := range e.Changes {
			from := origin{Object: p.Object, EntryID: e.ID, Field: c.Field}
			var v value
			_ = json.Unmarshal(c.Value, &v) // a value of another shape is an "other" change
			var md struct {
				PhoneNumberID string `json:"phone_number_id"`
			}
			_ = json.Unmarshal(v.Metadata, &md)
			n := len(evs)
			for _, raw := range v.Messages {
				var m item
				_ = json.Unmarshal(raw, &m)
				body, err := encode(messageBody{origin: from, Metadata: v.Metadata, Contacts: contactsFor(v.Contacts, m.From), Message: raw})
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
				var st item
				_ = json.Unmarshal(raw, &st)
				body, err := encode(statusBody{origin: from, Metadata: v.Metadata, Status: raw})
				if err != nil {
					return nil, err
				}
				id := ""
				if st.ID != "" {
					id = st.ID + ":" + st.Status
				}
				evs = append(evs, webhook.Event{
					ID:           id,
					Type:         "status." + st.Status,
					Conversation: md.PhoneNumberID + ":" + st.RecipientID,
					Body:         body,
					Headers:      headers,
				})
			}
			if len(evs) > n {
				continue
			}
			body, err := encode(changeBody{origin: from, Value: c.Value})
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
func contactsFor(contacts []json.RawMessage, from string) []json.RawMessage {
	var out []json.RawMessage
	for _, c := range contacts {
		var it item
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
// ("<", "&") as Meta sent them.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "cannot split the notification: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Check implements webhook.Checker: the tenant has secrets (the app
// secret) and no setting but "verify_token", which only the subscription
// handshake needs (a tenant subscribed before onboarding has none).
// Errors wrap webhook.ErrMisconfigured.
func (Provider) Check(cfg webhook.Config) error {
	return cfg.CheckSettings("whatsapp", nil, []string{"verify_token"})
}
