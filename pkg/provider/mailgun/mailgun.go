// Package mailgun verifies and parses Mailgun webhooks (JSON events): the
// signature Mailgun posts inside the body, hex HMAC-SHA256 under the
// webhook signing key of timestamp + token. It covers those two values and
// not the event; docs/providers/mailgun.md says what follows for replays,
// and describes ids, conversations and settings.
package mailgun

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Retries is what Mailgun documents: a webhook not answered 200 (nor 406)
// is retried during 8 hours, and nothing says a retry carries a new
// timestamp and token. The window covers the whole horizon, so a retry that
// carries the first attempt's signature still verifies; the token, not the
// timestamp, is what Mailgun offers against replays.
var Retries = webhook.Retries{
	Signing: webhook.Unsaid,
	Horizon: 8 * time.Hour,
	Source:  "https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/webhook-retries, https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks",
	Window:  webhook.Covering(8 * time.Hour),
}

// Provider implements webhook.Provider, webhook.Signer and webhook.Checker
// for Mailgun.
type Provider struct{}

var (
	_ webhook.Provider = Provider{}
	_ webhook.Signer   = Provider{}
	_ webhook.Checker  = Provider{}
)

// signature is the body's "signature" member.
type signature struct {
	Timestamp string `json:"timestamp"`
	Token     string `json:"token"`
	Signature string `json:"signature"`
}

// envelope is a webhook body: the signature and the event.
type envelope struct {
	Signature *signature      `json:"signature"`
	EventData json.RawMessage `json:"event-data"`
}

// Check reports a tenant entry without secrets, with an unknown setting or
// a bad tolerance.
func (Provider) Check(cfg webhook.Config) error {
	return cfg.CheckSettings("mailgun", nil, []string{"tolerance"})
}

// Verify checks signature.signature, the hex HMAC-SHA256 of
// signature.timestamp + signature.token, against every signing key, then
// the timestamp against Retries.Window (its Past replaced by a "tolerance"
// setting). It returns an error wrapping
// webhook.ErrMissingSignature (the body holds no signature object, or its
// timestamp or token is missing), webhook.ErrInvalidSignature,
// webhook.ErrStale or webhook.ErrMisconfigured.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	var env envelope
	if err := json.Unmarshal(req.Body, &env); err != nil || env.Signature == nil {
		return webhook.Errorf(webhook.ErrMissingSignature, "the body must be Mailgun's JSON with a signature object")
	}
	sig := env.Signature
	if sig.Signature == "" || sig.Token == "" || sig.Timestamp == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "signature, token and timestamp are required in the signature object")
	}
	if _, err := strconv.ParseInt(sig.Timestamp, 10, 64); err != nil {
		return webhook.Errorf(webhook.ErrMissingSignature, "signature.timestamp is not Unix seconds")
	}
	got, err := hex.DecodeString(sig.Signature)
	if err != nil || len(got) == 0 {
		return webhook.Errorf(webhook.ErrInvalidSignature, "signature.signature is not hex")
	}
	win, err := Retries.Window.Tenant(cfg)
	if err != nil {
		return err
	}
	if err := cfg.CheckSecrets("mailgun"); err != nil {
		return err
	}
	if !webhook.MatchMAC(sha256.New, cfg.Secrets, [][]byte{got}, []byte(sig.Timestamp), []byte(sig.Token)) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured signing key matches the signature")
	}
	return win.CheckUnix(sig.Timestamp, now)
}

// Sign rewrites the body's signature object: timestamp now, the token it
// held (a new one, derived from the event and the time, when it held none)
// and the signature with cfg.Secrets[0]. It is the one Signer that changes
// the body, since Mailgun carries the signature there; the event-data bytes
// stay as they were. It returns an error wrapping webhook.ErrMalformed when
// the body is not a JSON object, and webhook.ErrMisconfigured without
// secrets.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	if err := cfg.CheckSecrets("mailgun"); err != nil {
		return err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(req.Body, &doc); err != nil || doc == nil {
		return webhook.Errorf(webhook.ErrMalformed, "mailgun: the body must be a JSON object to sign")
	}
	var old signature
	_ = json.Unmarshal(doc["signature"], &old) // a missing or odd signature gets a new token
	ts := strconv.FormatInt(now.Unix(), 10)
	tok := old.Token
	if tok == "" {
		sum := sha256.Sum256(append([]byte(ts), doc["event-data"]...))
		tok = hex.EncodeToString(sum[:])[:50]
	}
	mac := webhook.MAC(sha256.New, []byte(cfg.Secrets[0]), []byte(ts), []byte(tok))
	doc["signature"], _ = json.Marshal(signature{Timestamp: ts, Token: tok, Signature: hex.EncodeToString(mac)}) // strings always encode
	body, err := json.Marshal(doc)
	if err != nil {
		return webhook.Errorf(webhook.ErrMalformed, "mailgun: %v", err)
	}
	req.Body = body
	return nil
}

// Events returns the event in event-data: id its "id", type its "event"
// (delivered, failed, opened, …), conversation its message
// ("message:<Message-Id>"). The key is the event's id rather than the
// signature's token, which Mailgun makes afresh for every attempt; the
// payload digest is the event-data, which is what a retry repeats. It
// returns an error wrapping webhook.ErrMalformed when event-data is not a
// JSON object with an id.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	var env envelope
	if err := json.Unmarshal(req.Body, &env); err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not JSON")
	}
	if _, err := jsonpath.Object(req.Body); err != nil {
		return nil, err
	}
	doc, err := jsonpath.Object(env.EventData)
	if err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "event-data is not a JSON object")
	}
	id, err := jsonpath.Required(doc, "event-data", "id")
	if err != nil {
		return nil, err
	}
	conv := jsonpath.First(doc, "message.headers.message-id")
	if conv != "" {
		conv = "message:" + strings.Trim(conv, "<>")
	}
	var data bytes.Buffer
	_ = json.Compact(&data, env.EventData) // valid JSON: Object decoded it
	return []webhook.Event{{ID: id, Type: jsonpath.First(doc, "event"), Conversation: conv, Body: req.Body, Defining: [][]byte{data.Bytes()}}}, nil
}
