// Package sendgrid verifies and parses SendGrid's signed Event Webhook:
// ECDSA P-256 with SHA-256 over timestamp + body, verified with the
// account's public verification key, and a batch of events each keyed by
// its sg_event_id. docs/providers/sendgrid.md describes the scheme, ids,
// conversations and settings.
package sendgrid

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Signature headers.
const (
	SignatureHeader = "X-Twilio-Email-Event-Webhook-Signature"
	TimestampHeader = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// stamped names the signature and timestamp headers.
var stamped = webhook.Stamped{Signature: SignatureHeader, Timestamp: TimestampHeader}

// Retries is what SendGrid documents of its retries: a batch is retried for
// up to 24 hours, and nothing says a retry is signed again when it is sent.
// The window covers the whole horizon, so a retry that carries the first
// attempt's timestamp still verifies; @sendgrid/eventwebhook's
// verifySignature checks no timestamp at all.
var Retries = webhook.Retries{
	Signing: webhook.Unsaid,
	Horizon: 24 * time.Hour,
	Source:  "https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook#retry-logic",
	Window:  webhook.Covering(24 * time.Hour),
}

// Provider implements webhook.Provider, webhook.Signer and webhook.Checker
// for SendGrid.
type Provider struct{}

var (
	_ webhook.Provider = Provider{}
	_ webhook.Signer   = Provider{}
	_ webhook.Checker  = Provider{}
)

// keyDER returns the DER bytes of a secret entry: base64 (as the dashboard
// shows the verification key) or PEM.
func keyDER(s string) ([]byte, bool) {
	s = strings.TrimSpace(s)
	if block, _ := pem.Decode([]byte(s)); block != nil {
		return block.Bytes, true
	}
	return webhook.DecodeBase64(base64.StdEncoding, s)
}

// publicKey returns the P-256 verification key of a secret entry: the
// verification key (base64 DER SubjectPublicKeyInfo), or the public half
// of a private key (base64 DER SEC 1), which only tests and the
// demo tenant hold, to sign.
func publicKey(s string) (*ecdsa.PublicKey, bool) {
	der, ok := keyDER(s)
	if !ok {
		return nil, false
	}
	if k, err := x509.ParsePKIXPublicKey(der); err == nil {
		pub, ok := k.(*ecdsa.PublicKey)
		return pub, ok && pub.Curve == elliptic.P256()
	}
	if priv, ok := privateKey(der); ok {
		return &priv.PublicKey, true
	}
	return nil, false
}

// privateKey parses a SEC 1 ("EC PRIVATE KEY") P-256 key. PKCS #8 is not
// accepted: its parser links RSA key parsing into the ingest binary for a
// key only tests and the demo hold.
func privateKey(der []byte) (*ecdsa.PrivateKey, bool) {
	if priv, err := x509.ParseECPrivateKey(der); err == nil {
		return priv, priv.Curve == elliptic.P256()
	}
	return nil, false
}

// isKey reports whether a key entry is a P-256 key.
func isKey(key string) bool {
	_, ok := publicKey(key)
	return ok
}

// keyKind is what a key entry must be, for errors.
const keyKind = "the Event Webhook's verification key (base64 ECDSA P-256 public key)"

// Check reports a tenant entry without keys (settings.public_key or
// secrets), with an unknown setting or a bad tolerance, or with a key that
// is not a P-256 key. Errors name the field, never its value.
func (Provider) Check(cfg webhook.Config) error {
	return webhook.CheckPublicKeys(cfg, "sendgrid", keyKind, isKey, "tolerance")
}

// Verify checks the base64 ASN.1 ECDSA signature of the SHA-256 of
// timestamp + raw body against every key (settings.public_key and
// secrets), then the timestamp
// against Retries.Window (its Past replaced by a "tolerance" setting). It
// returns an error wrapping
// webhook.ErrMissingSignature (a header is absent), webhook.ErrInvalidSignature
// (not base64, or no key verifies), webhook.ErrStale, or
// webhook.ErrMisconfigured (no keys, an entry that is no P-256 key, a bad
// tolerance).
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	sig64, ts, err := stamped.Headers(req)
	if err != nil {
		return err
	}
	sig, ok := webhook.DecodeBase64(base64.StdEncoding, sig64)
	if !ok {
		return webhook.Errorf(webhook.ErrInvalidSignature, "%s is not base64", SignatureHeader)
	}
	win, err := Retries.Window.Tenant(cfg)
	if err != nil {
		return err
	}
	h := sha256.New()
	h.Write([]byte(ts))
	h.Write(req.Body)
	digest := h.Sum(nil)
	verified, err := webhook.VerifyPublicKeys(cfg, "sendgrid", keyKind, func(key string) (bool, bool) {
		pub, valid := publicKey(key)
		return valid && ecdsa.VerifyASN1(pub, digest, sig), valid
	})
	if err != nil {
		return err
	}
	if !verified {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured verification key verifies %s", SignatureHeader)
	}
	return win.CheckUnix(ts, now)
}

// Sign sets the timestamp header to now and the signature header to the
// base64 ASN.1 ECDSA signature of SHA-256(timestamp + body) with
// cfg.Secrets[0], which must be a private key (base64 DER SEC 1, "EC PRIVATE KEY"):
// the demo tenant's and the tests'. ECDSA signatures are randomized, so
// signing twice gives two valid signatures. It returns an error wrapping
// webhook.ErrMisconfigured when there is no secret or the first is not a
// P-256 private key.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	return stamped.Sign(req, cfg, "sendgrid", now, func(secret, ts string) (string, error) {
		der, ok := keyDER(secret)
		var priv *ecdsa.PrivateKey
		if ok {
			priv, ok = privateKey(der)
		}
		if !ok {
			return "", webhook.Errorf(webhook.ErrMisconfigured, "sendgrid: signing needs a P-256 private key as secrets[0]")
		}
		digest := sha256.Sum256(append([]byte(ts), req.Body...))
		sig, err := ecdsa.SignASN1(rand.Reader, priv, digest[:])
		if err != nil {
			return "", webhook.Errorf(webhook.ErrMisconfigured, "sendgrid: sign: %v", err)
		}
		return base64.StdEncoding.EncodeToString(sig), nil
	})
}

// Events returns one event per item of the batch: id sg_event_id (unique
// per event, and kept when SendGrid posts the event again), type the item's
// "event" (processed, delivered, open, click, bounce, …), conversation the
// recipient ("email:<address>"), so a recipient's events keep their order.
// It returns an error wrapping webhook.ErrMalformed when the body is not a
// JSON array of objects, or an item has no sg_event_id.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(req.Body, &items); err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a JSON array of events")
	}
	if len(items) == 0 {
		return nil, webhook.Errorf(webhook.ErrMalformed, "batch holds no events")
	}
	evs := make([]webhook.Event, 0, len(items))
	for i, raw := range items {
		doc, err := jsonpath.Object(raw)
		if err != nil {
			return nil, webhook.Errorf(webhook.ErrMalformed, "event %d is not a JSON object", i)
		}
		id, err := jsonpath.Required(doc, "event "+strconv.Itoa(i), "sg_event_id")
		if err != nil {
			return nil, err
		}
		conv := jsonpath.First(doc, "email")
		if conv != "" {
			conv = "email:" + strings.ToLower(conv)
		}
		evs = append(evs, webhook.Event{ID: id, Type: jsonpath.First(doc, "event"), Conversation: conv, Body: raw})
	}
	return evs, nil
}
