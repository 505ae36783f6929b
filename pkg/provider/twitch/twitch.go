// Package twitch verifies and parses Twitch EventSub webhooks: the
// Twitch-Eventsub-Message-Signature, "sha256=" + hex HMAC-SHA256 under the
// subscription's secret of message id + timestamp + body, the ten-minute
// window, and the webhook_callback_verification challenge. The message id
// is signed and Twitch keeps it when it resends, so it is the event id.
// docs/providers/twitch.md describes the scheme, ids, conversations and
// settings.
package twitch

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// EventSub headers.
const (
	IDHeader        = "Twitch-Eventsub-Message-Id"
	TimestampHeader = "Twitch-Eventsub-Message-Timestamp"
	SignatureHeader = "Twitch-Eventsub-Message-Signature"
	TypeHeader      = "Twitch-Eventsub-Message-Type"
	RetryHeader     = "Twitch-Eventsub-Message-Retry"
)

// Retries is what Twitch documents: a notification is resent with the same
// message id and the time Twitch sent it, and the receiver is to "make sure
// the value in the timestamp header isn't older than 10 minutes" (nothing
// is said of one ahead). How long Twitch retries before it revokes the
// subscription is not documented.
var Retries = webhook.Retries{
	Signing: webhook.ByRule,
	Source:  "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#verifying-the-event-message",
	Window:  webhook.Window{Past: 10 * time.Minute, Future: webhook.AnyFuture},
}

const prefix = "sha256="

// Provider implements webhook.Provider, webhook.Signer, webhook.Handshaker
// and webhook.Checker for Twitch EventSub.
type Provider struct{}

var (
	_ webhook.Provider   = Provider{}
	_ webhook.Signer     = Provider{}
	_ webhook.Handshaker = Provider{}
	_ webhook.Checker    = Provider{}
)

// Check reports a tenant entry without secrets, with a setting (Twitch takes
// none), or with a secret Twitch
// refuses (10 to 100 ASCII characters). Errors name the entry by position.
func (Provider) Check(cfg webhook.Config) error {
	if err := cfg.CheckSettings("twitch", nil, nil); err != nil {
		return err
	}
	for i, s := range cfg.Secrets {
		if len(s) < 10 || len(s) > 100 {
			return webhook.Errorf(webhook.ErrMisconfigured, "twitch: secrets[%d] must be 10 to 100 characters, as Create EventSub Subscription requires", i)
		}
	}
	return nil
}

// Verify checks the signature over message id + timestamp + body against
// every secret, then the timestamp against Twitch's window (Retries.Window:
// 10 minutes old, any time ahead). It returns an error wrapping webhook.ErrMissingSignature (a header is absent or the
// timestamp is not RFC 3339), webhook.ErrInvalidSignature, webhook.ErrStale
// or webhook.ErrMisconfigured.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	sig, err := webhook.RequiredHeader(req, SignatureHeader)
	if err != nil {
		return err
	}
	id, ts := req.Header.Get(IDHeader), req.Header.Get(TimestampHeader)
	if id == "" || ts == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "%s and %s headers are required", IDHeader, TimestampHeader)
	}
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return webhook.Errorf(webhook.ErrMissingSignature, "%s is not an RFC 3339 time", TimestampHeader)
	}
	got, err := webhook.HexSignature(SignatureHeader, sig, prefix)
	if err != nil {
		return err
	}
	if err := cfg.CheckSecrets("twitch"); err != nil {
		return err
	}
	if !webhook.MatchMAC(sha256.New, cfg.Secrets, [][]byte{got}, []byte(id), []byte(ts), req.Body) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured secret matches %s", SignatureHeader)
	}
	return Retries.Window.Check(at, now)
}

// Sign sets the timestamp header to now (RFC 3339, as Twitch writes it) and
// the signature with cfg.Secrets[0]. It returns an error wrapping
// webhook.ErrMalformed when the request has no message id, and
// webhook.ErrMisconfigured without secrets.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	if err := cfg.CheckSecrets("twitch"); err != nil {
		return err
	}
	id := req.Header.Get(IDHeader)
	if id == "" {
		return webhook.Errorf(webhook.ErrMalformed, "twitch: a %s is required to sign", IDHeader)
	}
	ts := now.UTC().Format(time.RFC3339Nano)
	req.SetHeader(TimestampHeader, ts)
	req.SetHeader(SignatureHeader, prefix+hex.EncodeToString(webhook.MAC(sha256.New, []byte(cfg.Secrets[0]), []byte(id), []byte(ts), req.Body)))
	return nil
}

// Handshake answers webhook_callback_verification, after Verify, with the
// challenge as text/plain, as Twitch requires. ok is false for every other
// request. It returns an error wrapping webhook.ErrMalformed when the
// verification carries no challenge.
func (Provider) Handshake(req *webhook.Request, _ webhook.Config) (webhook.Reply, bool, error) {
	if req.Method != http.MethodPost || req.Header.Get(TypeHeader) != "webhook_callback_verification" {
		return webhook.Reply{}, false, nil
	}
	doc, err := jsonpath.Object(req.Body)
	if err != nil {
		return webhook.Reply{}, true, err
	}
	challenge := jsonpath.First(doc, "challenge")
	if challenge == "" {
		return webhook.Reply{}, true, webhook.Errorf(webhook.ErrMalformed, "webhook_callback_verification has no challenge")
	}
	return webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Body: challenge}, true, nil
}

// Events returns the notification or revocation as one event: id the
// message id, type subscription.type ("revocation:<type>" for a
// revocation), conversation the broadcaster ("broadcaster:<id>"). It
// returns an error wrapping webhook.ErrMalformed when the body is not a
// JSON object.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	doc, err := jsonpath.Object(req.Body)
	if err != nil {
		return nil, err
	}
	typ := jsonpath.First(doc, "subscription.type")
	if req.Header.Get(TypeHeader) == "revocation" {
		typ = "revocation:" + typ
	}
	conv := jsonpath.First(doc, "event.broadcaster_user_id", "event.to_broadcaster_user_id",
		"subscription.condition.broadcaster_user_id", "subscription.condition.to_broadcaster_user_id", "event.user_id")
	if conv != "" {
		conv = "broadcaster:" + conv
	}
	headers := map[string]string{}
	for _, h := range []string{TypeHeader, RetryHeader, "Twitch-Eventsub-Subscription-Type", "Twitch-Eventsub-Subscription-Version"} {
		if v := req.Header.Get(h); v != "" {
			headers[strings.ToLower(h)] = v
		}
	}
	return []webhook.Event{{ID: req.Header.Get(IDHeader), Type: typ, Conversation: conv, Body: req.Body, Headers: headers}}, nil
}
