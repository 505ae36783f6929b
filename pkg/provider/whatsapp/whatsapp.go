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
	"crypto/sha256"
	"crypto/subtle"
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
	var buf [sha256.Size]byte
	got, ok := webhook.AppendHex(buf[:0], sig[len(prefix):])
	if !ok || len(got) == 0 {
		return webhook.Errorf(webhook.ErrInvalidSignature, "X-Hub-Signature-256 is not hex")
	}
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "whatsapp: no secrets configured")
	}
	if !webhook.MatchMAC(sha256New, cfg.Secrets, [][]byte{got}, req.Body) {
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

// The members read at each level of a notification, each level in the same
// pass that finds the array elements. Where a struct would refuse a member's
// type (an "entry" that is not an array), the delivery is malformed; inside
// a change's value a member of another type is ignored, as before.
var (
	payloadPaths = webhook.NewPaths("", "object", "entry")
	entryPaths   = webhook.NewPaths("id", "changes")
	changePaths  = webhook.NewPaths("field", "value", "value.metadata", "value.metadata.phone_number_id",
		"value.contacts", "value.messages", "value.statuses")
	itemPaths = webhook.NewPaths("id", "from", "type", "status", "recipient_id", "wa_id")
)

const (
	cField = iota
	cValue
	cMetadata
	cPhone
	cContacts
	cMessages
	cStatuses
	nChange
)

const (
	iID = iota
	iFrom
	iType
	iStatus
	iRecipient
	iWaID
	nItem
)

// change is one entry[].changes[] item.
type change struct {
	object, entryID, field string
	value                  webhook.Value
}

// Events splits a delivery into one event per message, per status and per
// other change, as described in the package comment. It returns an error
// wrapping webhook.ErrMalformed when the body is not a JSON object of that
// shape.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	var pbuf [3]webhook.Value
	p, err := payloadPaths.Scan(req.Body, pbuf[:0])
	if err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a WhatsApp notification: %v", err)
	}
	object, ok := p[1].AsString()
	if !objectOrNull(p[0]) || !ok || !arrayOrNull(p[2]) {
		return nil, malformed()
	}
	headers := map[string]string{"content-type": req.Header.Get("Content-Type")}
	var evs []webhook.Event
	var others []change
	var ebuf [2]webhook.Value
	var cbuf [nChange]webhook.Value
	for e, ev := range entryPaths.Elements(p[2], ebuf[:0]) {
		entryID, ok := ev[0].AsString()
		if !objectOrNull(e) || !ok || !arrayOrNull(ev[1]) {
			return nil, malformed()
		}
		for c, cv := range changePaths.Elements(ev[1], cbuf[:0]) {
			field, ok := cv[cField].AsString()
			if !objectOrNull(c) || !ok {
				return nil, malformed()
			}
			ch := change{object: object, entryID: entryID, field: field, value: cv[cValue]}
			n := len(evs)
			evs = appendEvents(evs, ch, cv, headers)
			if len(evs) == n {
				others = append(others, ch)
			}
		}
	}
	if len(evs) == 0 {
		ev := webhook.Event{Body: req.Body, Headers: headers}
		if len(others) > 0 {
			ev.Type, ev.Conversation = others[0].field, others[0].entryID
		}
		return []webhook.Event{ev}, nil
	}
	for _, ch := range others {
		evs = append(evs, webhook.Event{Type: ch.field, Conversation: ch.entryID, Body: changeBody(ch), Headers: headers})
	}
	return evs, nil
}

func malformed() error {
	return webhook.Errorf(webhook.ErrMalformed, "body is not a WhatsApp notification: a member has the wrong type")
}

func objectOrNull(v webhook.Value) bool {
	return v.Kind == webhook.KindObject || v.Kind == webhook.KindNull || v.Kind == webhook.KindMissing
}

func arrayOrNull(v webhook.Value) bool {
	return v.Kind == webhook.KindArray || v.Kind == webhook.KindNull || v.Kind == webhook.KindMissing
}

// appendEvents appends an event per message and per status of ch, whose
// changePaths values are cv. The value's members are read as decoding it
// into a struct would, ignoring any of the wrong type.
func appendEvents(evs []webhook.Event, ch change, cv []webhook.Value, headers map[string]string) []webhook.Event {
	if ch.value.Kind != webhook.KindObject {
		return evs
	}
	metadata, contacts := cv[cMetadata], cv[cContacts]
	phone := ""
	if metadata.Kind == webhook.KindObject {
		phone = str(cv[cPhone])
	}
	var ibuf [nItem]webhook.Value
	for raw, m := range itemPaths.Elements(cv[cMessages], ibuf[:0]) {
		from := str(m[iFrom])
		b := open(ch, len(raw.Raw)+len(metadata.Raw)+len(contacts.Raw))
		b = appendRaw(b, `"metadata":`, metadata)
		b = appendContacts(b, contacts, from)
		b = raw.AppendCompact(append(b, `"message":`...))
		evs = append(evs, webhook.Event{
			ID:           str(m[iID]),
			Type:         "message." + str(m[iType]),
			Conversation: phone + ":" + from,
			Body:         append(b, '}'),
			Headers:      headers,
		})
	}
	for raw, st := range itemPaths.Elements(cv[cStatuses], ibuf[:0]) {
		b := open(ch, len(raw.Raw)+len(metadata.Raw))
		b = appendRaw(b, `"metadata":`, metadata)
		b = raw.AppendCompact(append(b, `"status":`...))
		id, status := str(st[iID]), str(st[iStatus])
		if id != "" {
			id += ":" + status
		}
		evs = append(evs, webhook.Event{
			ID:           id,
			Type:         "status." + status,
			Conversation: phone + ":" + str(st[iRecipient]),
			Body:         append(b, '}'),
			Headers:      headers,
		})
	}
	return evs
}

// str returns a string member as a struct field would hold it: "" when it
// is of another type.
func str(v webhook.Value) string {
	s, _ := v.AsString()
	return s
}

// The per-event bodies handed to the worker are
//
//	{"object","entry_id","field","metadata","contacts","message"} (a message),
//	{"object","entry_id","field","metadata","status"} (a status) and
//	{"object","entry_id","field","value"} (any other change),
//
// members left out when empty (the last two are always there), strings
// escaped as encoding/json escapes them without HTML escaping, and the raw
// members copied as Meta sent them, minus insignificant whitespace, so
// message text keeps its bytes ("<", "&") and escapes ("\u00e9").

// open starts a body with the change's object, entry_id and field, each
// followed by a comma: a member always follows them.
func open(ch change, n int) []byte {
	b := make([]byte, 0, 64+len(ch.object)+len(ch.entryID)+len(ch.field)+n)
	b = append(b, '{')
	for _, m := range [...]struct{ name, value string }{{`"object":`, ch.object}, {`"entry_id":`, ch.entryID}, {`"field":`, ch.field}} {
		if m.value != "" {
			b = append(webhook.AppendJSONString(append(b, m.name...), m.value), ',')
		}
	}
	return b
}

// appendRaw appends name and v followed by a comma, unless v is missing.
func appendRaw(b []byte, name string, v webhook.Value) []byte {
	if v.Kind == webhook.KindMissing {
		return b
	}
	return append(v.AppendCompact(append(b, name...)), ',')
}

// appendContacts appends the "contacts" member narrowed to the contacts
// whose wa_id is from, or all of them when none is (so the worker never
// loses the sender's profile); nothing when there are none. A contact that
// is not an object, or has a member of the wrong type, is no match.
func appendContacts(b []byte, contacts webhook.Value, from string) []byte {
	mark := len(b)
	b = append(b, `"contacts":[`...)
	n := 0
	var buf [nItem]webhook.Value
	for c, it := range itemPaths.Elements(contacts, buf[:0]) {
		match := objectOrNull(c)
		for _, v := range it {
			match = match && (v.Kind == webhook.KindString || v.Kind == webhook.KindNull || v.Kind == webhook.KindMissing)
		}
		if match && str(it[iWaID]) == from {
			if n++; n > 1 {
				b = append(b, ',')
			}
			b = c.AppendCompact(b)
		}
	}
	if n == 0 {
		for c := range contacts.Elements() {
			if n++; n > 1 {
				b = append(b, ',')
			}
			b = c.AppendCompact(b)
		}
	}
	if n == 0 {
		return b[:mark]
	}
	return append(b, ']', ',')
}

// changeBody is the body of a change with neither messages nor statuses.
func changeBody(ch change) []byte {
	b := open(ch, len(ch.value.Raw))
	if ch.value.Kind != webhook.KindMissing {
		return append(ch.value.AppendCompact(append(b, `"value":`...)), '}')
	}
	if len(b) > 1 {
		b = b[:len(b)-1] // the comma after the last member
	}
	return append(b, '}')
}
