// Package slack verifies and parses Slack requests: Events API callbacks
// (JSON), slash commands and interactivity payloads (form bodies), with
// Slack's signed timestamp, and answers url_verification and ssl_check.
// docs/providers/slack.md describes the scheme, the ids and conversations
// derived, and the settings.
package slack

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Retries is what Slack documents: an event is retried three times, near
// immediately, after 1 minute and after 5 minutes, and a request whose
// timestamp is more than five minutes from local time is to be ignored, in
// either direction. Slack's own rule would refuse its last retry were it
// not signed when sent, so the window is that rule.
var Retries = webhook.Retries{
	Signing: webhook.ByRule,
	Horizon: 6 * time.Minute,
	Source:  "https://api.slack.com/apis/events-api#retries, https://api.slack.com/authentication/verifying-requests-from-slack",
	Window:  webhook.Symmetric(5 * time.Minute),
}

// Provider implements webhook.Provider and webhook.Handshaker for Slack.
type Provider struct{}

const prefix = "v0="

// stamped names Slack's signature and timestamp headers.
var stamped = webhook.Stamped{Signature: "X-Slack-Signature", Timestamp: "X-Slack-Request-Timestamp"}

// Verify checks X-Slack-Signature against every signing secret and the
// timestamp against Retries.Window (its Past replaced by a "tolerance"
// setting). It returns an error wrapping
// webhook.ErrMissingSignature (a header is absent or the timestamp is not a
// number), webhook.ErrInvalidSignature (malformed or no secret matches),
// webhook.ErrStale (genuine but outside the tolerance) or
// webhook.ErrMisconfigured (no secrets, bad tolerance).
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	sig, ts, err := stamped.Headers(req)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
		return webhook.Errorf(webhook.ErrMissingSignature, "X-Slack-Request-Timestamp is not Unix seconds")
	}
	got, err := webhook.HexSignature(stamped.Signature, sig, prefix)
	if err != nil {
		return err
	}
	win, err := Retries.Window.Tenant(cfg)
	if err != nil {
		return err
	}
	if err := cfg.CheckSecrets("slack"); err != nil {
		return err
	}
	// The signature first, so a forged request learns nothing about our
	// clock; then staleness of a genuine one.
	if !webhook.MatchMAC(sha256.New, cfg.Secrets, [][]byte{got}, []byte("v0:"+ts+":"), req.Body) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured signing secret matches X-Slack-Signature")
	}
	return win.CheckUnix(ts, now)
}

// Handshake answers url_verification and ssl_check requests. The ingest path
// calls it for POSTs only after Verify succeeded. ok is false for every other
// request; it never returns an error.
func (Provider) Handshake(req *webhook.Request, _ webhook.Config) (webhook.Reply, bool, error) {
	if req.Method != http.MethodPost {
		return webhook.Reply{}, false, nil
	}
	if isForm(req) {
		form, err := url.ParseQuery(string(req.Body))
		if err == nil && form.Get("ssl_check") == "1" {
			return webhook.Reply{Status: http.StatusOK, ContentType: "text/plain"}, true, nil
		}
		return webhook.Reply{}, false, nil
	}
	doc, err := jsonpath.Decode(req.Body)
	if err != nil || jsonpath.Text(doc, "type") != "url_verification" {
		return webhook.Reply{}, false, nil
	}
	return webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Body: jsonpath.Text(doc, "challenge")}, true, nil
}

// Events returns the single event of a request. It returns an error wrapping
// webhook.ErrMalformed when the body is neither a JSON object nor a form, or
// an interactivity payload is not JSON.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	headers := map[string]string{"content-type": req.Header.Get("Content-Type")}
	for _, h := range []string{"X-Slack-Retry-Num", "X-Slack-Retry-Reason"} {
		if v := req.Header.Get(h); v != "" {
			headers[strings.ToLower(h)] = v
		}
	}
	ev := webhook.Event{Body: req.Body, Headers: headers}
	if isForm(req) {
		form, err := url.ParseQuery(string(req.Body))
		if err != nil {
			return nil, webhook.Errorf(webhook.ErrMalformed, "form body is not URL-encoded")
		}
		if p := form.Get("payload"); p != "" {
			doc, err := jsonpath.Decode([]byte(p))
			if err != nil {
				return nil, err
			}
			ev.Type = jsonpath.Text(doc, "type")
			ev.Conversation = join(
				first(doc, "team.id", "user.team_id", "enterprise.id"),
				first(doc, "channel.id", "container.channel_id"),
				first(doc, "container.thread_ts", "message.thread_ts", "container.message_ts", "message.ts"),
			)
			return []webhook.Event{ev}, nil
		}
		if form.Get("command") != "" {
			ev.Type = "slash_command"
		}
		ev.Conversation = join(form.Get("team_id"), form.Get("channel_id"), "")
		return []webhook.Event{ev}, nil
	}
	doc, err := jsonpath.Decode(req.Body)
	if err != nil {
		return nil, err
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a JSON object")
	}
	ev.ID = jsonpath.Text(doc, "event_id")
	ev.Type = jsonpath.Text(doc, "type")
	if t := jsonpath.Text(doc, "event.type"); t != "" {
		ev.Type = t
	}
	ev.Conversation = join(
		first(doc, "team_id", "context_team_id", "enterprise_id"),
		first(doc, "event.channel.id", "event.channel", "event.item.channel", "event.channel_id"),
		first(doc, "event.thread_ts", "event.message.thread_ts", "event.previous_message.thread_ts",
			"event.message.ts", "event.previous_message.ts", "event.item.ts", "event.deleted_ts", "event.ts"),
	)
	return []webhook.Event{ev}, nil
}

// isForm reports whether the request carries a form body. Slack always sets
// the Content-Type; a body that is not JSON is treated as a form too.
func isForm(req *webhook.Request) bool {
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err == nil {
		return mt == "application/x-www-form-urlencoded"
	}
	b := bytes.TrimLeft(req.Body, " \t\r\n")
	return len(b) > 0 && b[0] != '{' && b[0] != '['
}

// first returns the first of paths whose value is a string or number (never
// an object: event.channel is an object in channel_* events, a string
// elsewhere), as text.
func first(doc any, paths ...string) string {
	for _, p := range paths {
		if v := jsonpath.Text(doc, p); v != "" && v[0] != '{' && v[0] != '[' {
			return v
		}
	}
	return ""
}

// join builds team:channel:thread, dropping the parts after an empty channel.
func join(team, channel, thread string) string {
	switch {
	case channel == "":
		return team
	case thread == "":
		return team + ":" + channel
	default:
		return team + ":" + channel + ":" + thread
	}
}

// Sign sets X-Slack-Request-Timestamp to now (Unix seconds) and
// X-Slack-Signature to "v0=" + hex HMAC-SHA256 of "v0:<timestamp>:<body>"
// under cfg.Secrets[0], the app's signing secret. It returns an error
// wrapping webhook.ErrMisconfigured when the tenant has no secrets.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	return stamped.Sign(req, cfg, "slack", now, func(secret, ts string) (string, error) {
		mac := webhook.MAC(sha256.New, []byte(secret), []byte("v0:"+ts+":"), req.Body)
		return prefix + hex.EncodeToString(mac), nil
	})
}

// Check implements webhook.Checker: the tenant has secrets and no setting
// but a positive "tolerance". Errors wrap webhook.ErrMisconfigured.
func (Provider) Check(cfg webhook.Config) error {
	return cfg.CheckSettings("slack", nil, []string{"tolerance"})
}
