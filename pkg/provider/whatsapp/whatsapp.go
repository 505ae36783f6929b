// Package whatsapp verifies and parses Meta WhatsApp Cloud API webhooks.
//
// Signature: X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256(app secret,
// raw body). Meta escapes non-ASCII characters ("\u00e9") and slashes in the
// body it signs, so the raw bytes are verified and never re-encoded.
//
// Handshake: when the webhook is configured, Meta sends
// GET ?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…; when the token
// equals the "verify_token" setting (compared in constant time) the reply is
// 200 text/plain with the challenge, otherwise webhook.ErrForbidden.
//
// Replay rules: Meta signs no timestamp; replays are caught by the
// idempotency key.
//
// Events: one POST may batch several entries, changes, messages and
// statuses; each becomes its own event:
//
//   - each entry[].changes[].value.messages[] item: id = the message id
//     (wamid.…), type = "message.<type>" ("message.text"), body =
//     {"object","entry_id","field","metadata","contacts","message"} with the
//     contacts narrowed to the sender;
//   - each value.statuses[] item: id = "<status id>:<status>" (one message
//     is sent, delivered and read: three events), type = "status.<status>",
//     body = {"object","entry_id","field","metadata","status"};
//   - a change with neither (account_update, template status, errors …):
//     body = {"object","entry_id","field","value"}, type = the field, id = the
//     content hash of that body — or, when the whole POST has no message or
//     status at all, one event whose body is the raw POST, keyed by its
//     content hash.
//
// Conversation: metadata.phone_number_id + ":" + the customer's number
// ("from" for messages, "recipient_id" for statuses), so a customer's
// messages and the statuses of the replies sent to them are ordered
// together; other changes use the WhatsApp Business Account id (entry id).
//
// Settings: "verify_token" (required for the handshake). The secret is the
// Meta app secret.
package whatsapp

import (
	"bytes"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Provider implements webhook.Provider and webhook.Handshaker for the
// WhatsApp Cloud API.
type Provider struct{}

var (
	_ webhook.Provider   = Provider{}
	_ webhook.Handshaker = Provider{}
)

var sha256New, _ = webhook.Hash("sha256")

const prefix = "sha256="

// Verify checks X-Hub-Signature-256 against every app secret. It returns an
// error wrapping webhook.ErrMissingSignature when the header is absent,
// webhook.ErrInvalidSignature when it is malformed or no secret matches, and
// webhook.ErrMisconfigured when the tenant has no secrets.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	sig := strings.TrimSpace(req.Header.Get("X-Hub-Signature-256"))
	if sig == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "X-Hub-Signature-256 header is required")
	}
	if !strings.HasPrefix(sig, prefix) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "X-Hub-Signature-256 must start with %q", prefix)
	}
	got, err := hex.DecodeString(sig[len(prefix):])
	if err != nil || len(got) == 0 {
		return webhook.Errorf(webhook.ErrInvalidSignature, "X-Hub-Signature-256 is not hex")
	}
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "whatsapp: no secrets configured")
	}
	cands := make([][]byte, 0, len(cfg.Secrets))
	for _, s := range cfg.Secrets {
		cands = append(cands, webhook.MAC(sha256New, []byte(s), req.Body))
	}
	if !webhook.MatchAny(got, cands) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured secret matches X-Hub-Signature-256")
	}
	return nil
}

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

type metadata struct {
	PhoneNumberID string `json:"phone_number_id"`
}

type item struct {
	ID          string `json:"id"`
	From        string `json:"from"`
	Type        string `json:"type"`
	Status      string `json:"status"`
	RecipientID string `json:"recipient_id"`
	WaID        string `json:"wa_id"`
}

// messageBody, statusBody and changeBody are the per-event bodies handed to
// the worker.
type messageBody struct {
	Object   string            `json:"object,omitempty"`
	EntryID  string            `json:"entry_id,omitempty"`
	Field    string            `json:"field,omitempty"`
	Metadata json.RawMessage   `json:"metadata,omitempty"`
	Contacts []json.RawMessage `json:"contacts,omitempty"`
	Message  json.RawMessage   `json:"message"`
}

type statusBody struct {
	Object   string          `json:"object,omitempty"`
	EntryID  string          `json:"entry_id,omitempty"`
	Field    string          `json:"field,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Status   json.RawMessage `json:"status"`
}

type changeBody struct {
	Object  string          `json:"object,omitempty"`
	EntryID string          `json:"entry_id,omitempty"`
	Field   string          `json:"field,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
}

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
			var v value
			_ = json.Unmarshal(c.Value, &v) // a value of another shape is an "other" change
			var md metadata
			_ = json.Unmarshal(v.Metadata, &md)
			n := len(evs)
			for _, raw := range v.Messages {
				var m item
				_ = json.Unmarshal(raw, &m)
				body, err := encode(messageBody{
					Object: p.Object, EntryID: e.ID, Field: c.Field,
					Metadata: v.Metadata, Contacts: contactsFor(v.Contacts, m.From), Message: raw,
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
				var s item
				_ = json.Unmarshal(raw, &s)
				body, err := encode(statusBody{
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
			body, err := encode(changeBody{Object: p.Object, EntryID: e.ID, Field: c.Field, Value: c.Value})
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
// ("<", "&") and escapes ("\u00e9") as Meta sent them.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "cannot split the notification: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
