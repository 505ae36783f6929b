// Package discord verifies and parses Discord's HTTP deliveries: interactions
// (slash commands, components, modals, autocomplete) and webhook events, both
// signed with the application's Ed25519 key over timestamp + body. It answers
// the PINGs Discord sends to check the URL, and gives each interaction the
// synchronous response Discord requires within 3 seconds (a deferred
// response) while the interaction itself is queued for the worker, which
// follows up through the interaction token. docs/providers/discord.md
// describes the scheme, the answers, ids and conversations, and the settings.
package discord

import (
	"crypto/ed25519"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Signature headers.
const (
	SignatureHeader = "X-Signature-Ed25519"
	TimestampHeader = "X-Signature-Timestamp"
)

// stamped names the signature and timestamp headers.
var stamped = webhook.Stamped{Signature: SignatureHeader, Timestamp: TimestampHeader}

// Retries is what Discord documents of its retries: none. An interaction
// is sent once and fails for the user unless it is answered within 3
// seconds, so the clock allowance is the window (discord-interactions'
// verifyKey checks no timestamp).
var Retries = webhook.Retries{
	Signing: webhook.Once,
	Source:  "https://discord.com/developers/docs/interactions/receiving-and-responding#responding-to-an-interaction",
	Window:  webhook.Symmetric(webhook.Skew),
}

// Provider implements webhook.Provider, webhook.Signer, webhook.Handshaker,
// webhook.Responder and webhook.Checker for Discord.
type Provider struct{}

var (
	_ webhook.Provider   = Provider{}
	_ webhook.Signer     = Provider{}
	_ webhook.Handshaker = Provider{}
	_ webhook.Responder  = Provider{}
	_ webhook.Checker    = Provider{}
)

// publicKey returns the verification key of a secret entry: the
// application's public key (64 hex characters, as the Developer Portal
// shows it), or the public half of a private key (128 hex characters,
// seed then public key, as tweetnacl and Go write it; tests and the demo
// tenant sign with one).
func publicKey(s string) (ed25519.PublicKey, bool) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	switch {
	case err != nil:
		return nil, false
	case len(b) == ed25519.PublicKeySize:
		return b, true
	case len(b) == ed25519.PrivateKeySize:
		return ed25519.PrivateKey(b).Public().(ed25519.PublicKey), true
	}
	return nil, false
}

// isKey reports whether a key entry is a hex Ed25519 key.
func isKey(key string) bool {
	_, ok := publicKey(key)
	return ok
}

// keyKind is what a key entry must be, for errors.
const keyKind = "the application's public key (64 hex characters)"

// Check reports a tenant entry without keys (settings.public_key or
// secrets), with an unknown setting or a bad tolerance, or with a key that
// is not a hex Ed25519 key. Errors name the field, never its value.
func (Provider) Check(cfg webhook.Config) error {
	return webhook.CheckPublicKeys(cfg, "discord", keyKind, isKey, "tolerance", "ephemeral")
}

// Verify checks X-Signature-Ed25519, the hex Ed25519 signature of
// X-Signature-Timestamp followed by the raw body, against every key
// (settings.public_key and secrets), then the timestamp against
// Retries.Window (its Past replaced by a "tolerance" setting). It returns
// an error wrapping webhook.ErrMissingSignature (a header is absent or the timestamp
// is not a number), webhook.ErrInvalidSignature (not hex, or no key
// verifies), webhook.ErrStale, or webhook.ErrMisconfigured (no keys, a key
// that is not one, a bad tolerance).
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	sigHex, ts, err := stamped.Headers(req)
	if err != nil {
		return err
	}
	sig, err := hex.DecodeString(sigHex)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return webhook.Errorf(webhook.ErrInvalidSignature, "%s is not a hex Ed25519 signature", SignatureHeader)
	}
	win, err := Retries.Window.Tenant(cfg)
	if err != nil {
		return err
	}
	msg := make([]byte, 0, len(ts)+len(req.Body))
	msg = append(append(msg, ts...), req.Body...)
	ok, err := webhook.VerifyPublicKeys(cfg, "discord", keyKind, func(key string) (bool, bool) {
		pub, valid := publicKey(key)
		return valid && ed25519.Verify(pub, msg, sig), valid
	})
	if err != nil {
		return err
	}
	if !ok {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured public key verifies %s", SignatureHeader)
	}
	return win.CheckUnix(ts, now)
}

// Sign sets X-Signature-Timestamp to now and X-Signature-Ed25519 to the
// signature of timestamp + body with cfg.Secrets[0], which must be a
// private key (128 hex characters): the demo tenant's and the tests'. It
// returns an error wrapping webhook.ErrMisconfigured when there is no
// secret or the first is not a private key.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	return stamped.Sign(req, cfg, "discord", now, func(secret, ts string) (string, error) {
		b, err := hex.DecodeString(strings.TrimSpace(secret))
		if err != nil || len(b) != ed25519.PrivateKeySize {
			return "", webhook.Errorf(webhook.ErrMisconfigured, "discord: signing needs a private key (128 hex characters) as secrets[0]")
		}
		msg := append([]byte(ts), req.Body...)
		return hex.EncodeToString(ed25519.Sign(ed25519.PrivateKey(b), msg)), nil
	})
}

// Interaction types (https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-object-interaction-type).
const (
	interactionPing         = "1"
	interactionCommand      = "2"
	interactionComponent    = "3"
	interactionAutocomplete = "4"
	interactionModalSubmit  = "5"
)

// delivery is what a verified body is: an interaction, or a webhook event
// ("event" present; type 0 is its PING, 1 an event).
type delivery struct {
	doc     any
	webhook bool
	typ     string
}

func parse(body []byte) (delivery, error) {
	doc, err := jsonpath.Object(body)
	if err != nil {
		return delivery{}, err
	}
	d := delivery{doc: doc, typ: jsonpath.First(doc, "type")}
	if d.typ == "" {
		return d, webhook.Errorf(webhook.ErrMalformed, "body has no type")
	}
	_, hasEvent := jsonpath.Field(doc, "event")
	d.webhook = hasEvent || d.typ == "0"
	return d, nil
}

// Handshake answers Discord's PINGs, after Verify: an interaction PING
// (type 1) with the PONG {"type":1}, a webhook events PING (type 0) with
// 204. Discord also sends requests with bad signatures to check that they
// are refused; Verify answers those 401 before this is called. ok is false
// for every other request; it never returns an error.
func (Provider) Handshake(req *webhook.Request, _ webhook.Config) (webhook.Reply, bool, error) {
	if req.Method != http.MethodPost {
		return webhook.Reply{}, false, nil
	}
	d, err := parse(req.Body)
	switch {
	case err != nil:
		return webhook.Reply{}, false, nil
	case d.webhook && d.typ == "0":
		return webhook.Reply{Status: http.StatusNoContent}, true, nil
	case !d.webhook && d.typ == interactionPing:
		return webhook.Reply{Status: http.StatusOK, ContentType: "application/json", Body: `{"type":1}`}, true, nil
	}
	return webhook.Reply{}, false, nil
}

// Respond gives a queued delivery the answer Discord requires: for a
// command or a modal submission, DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE
// ({"type":5}: "thinking…", the worker edits the original response, with
// the ephemeral flag when the "ephemeral" setting is "true"); for a
// component, DEFERRED_UPDATE_MESSAGE ({"type":6}); for autocomplete, which
// cannot be deferred, an empty choice list ({"type":8}); for a webhook
// event, 204.
func (Provider) Respond(req *webhook.Request, cfg webhook.Config, _ []webhook.Event) (webhook.Reply, bool) {
	d, err := parse(req.Body)
	if err != nil {
		return webhook.Reply{}, false
	}
	if d.webhook {
		return webhook.Reply{Status: http.StatusNoContent}, true
	}
	var body string
	switch d.typ {
	case interactionCommand, interactionModalSubmit:
		body = `{"type":5}`
		if cfg.Settings["ephemeral"] == "true" {
			body = `{"type":5,"data":{"flags":64}}`
		}
	case interactionComponent:
		body = `{"type":6}`
	case interactionAutocomplete:
		body = `{"type":8,"data":{"choices":[]}}`
	default:
		return webhook.Reply{}, false
	}
	return webhook.Reply{Status: http.StatusOK, ContentType: "application/json", Body: body}, true
}

// Events returns the delivery's single event. An interaction's id is its
// snowflake "id"; its type "interaction.<n>", with the command, component
// or modal name appended ("interaction.2:ping"); its conversation the
// channel ("channel:<id>"), else the user. A webhook event has no id: its
// key is the body's hash; its type is event.type. It returns an error
// wrapping webhook.ErrMalformed when the body is not a JSON object with a
// type, or an interaction has no id.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	d, err := parse(req.Body)
	if err != nil {
		return nil, err
	}
	headers := map[string]string{"content-type": req.Header.Get("Content-Type")}
	if d.webhook {
		conv := jsonpath.First(d.doc, "event.data.guild.id")
		if conv != "" {
			conv = "guild:" + conv
		}
		return []webhook.Event{{Type: jsonpath.First(d.doc, "event.type"), Conversation: conv, Body: req.Body, Headers: headers}}, nil
	}
	id, err := jsonpath.Required(d.doc, "interaction", "id")
	if err != nil {
		return nil, err
	}
	typ := "interaction." + d.typ
	if name := jsonpath.First(d.doc, "data.name", "data.custom_id"); name != "" {
		typ += ":" + name
	}
	conv := jsonpath.First(d.doc, "channel_id", "channel.id")
	if conv != "" {
		conv = "channel:" + conv
	} else if u := jsonpath.First(d.doc, "member.user.id", "user.id"); u != "" {
		conv = "user:" + u
	}
	return []webhook.Event{{ID: id, Type: typ, Conversation: conv, Body: req.Body, Headers: headers}}, nil
}
