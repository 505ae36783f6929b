// Package zoom verifies and parses Zoom webhooks: x-zm-signature, "v0=" +
// hex HMAC-SHA256 under the app's secret token of "v0:<timestamp>:<body>",
// and answers the endpoint.url_validation challenge Zoom sends when the
// endpoint is saved and every 72 hours. docs/providers/zoom.md describes
// the scheme, ids, conversations and settings.
package zoom

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Signature headers.
const (
	SignatureHeader = "X-Zm-Signature"
	TimestampHeader = "X-Zm-Request-Timestamp"
)

// Retries is what Zoom documents: a notification not answered in 3 seconds
// is retried three times, the last about 90 minutes after the first
// attempt (its support article: 5, then 20, then 60 minutes apart, 85 in
// all), and nothing says a retry is signed again. The window covers the
// whole horizon.
var Retries = webhook.Retries{
	Signing: webhook.Unsaid,
	Horizon: 90 * time.Minute,
	Source:  "https://developers.zoom.us/docs/api/webhooks/#notification-delivery, https://devsupport.zoom.us/hc/en-us/articles/360059893812-Webhook-delays",
	Window:  webhook.Covering(90 * time.Minute),
}

const prefix = "v0="

// stamped names the signature and timestamp headers.
var stamped = webhook.Stamped{Signature: SignatureHeader, Timestamp: TimestampHeader}

// Provider implements webhook.Provider, webhook.Signer, webhook.Handshaker
// and webhook.Checker for Zoom.
type Provider struct{}

var (
	_ webhook.Provider   = Provider{}
	_ webhook.Signer     = Provider{}
	_ webhook.Handshaker = Provider{}
	_ webhook.Checker    = Provider{}
)

// Check reports a tenant entry without secrets, with an unknown setting or
// a bad tolerance.
func (Provider) Check(cfg webhook.Config) error {
	return cfg.CheckSettings("zoom", nil, []string{"tolerance"})
}

// Verify checks x-zm-signature against every secret token, then the
// timestamp against Retries.Window (its Past replaced by a "tolerance"
// setting). It returns an error wrapping
// webhook.ErrMissingSignature (a header is absent or the timestamp is not a
// number), webhook.ErrInvalidSignature, webhook.ErrStale or
// webhook.ErrMisconfigured.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	sig, err := webhook.RequiredHeader(req, SignatureHeader)
	if err != nil {
		return err
	}
	ts := strings.TrimSpace(req.Header.Get(TimestampHeader))
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
		return webhook.Errorf(webhook.ErrMissingSignature, "%s must be Unix seconds", TimestampHeader)
	}
	got, err := webhook.HexSignature(SignatureHeader, sig, prefix)
	if err != nil {
		return err
	}
	win, err := Retries.Window.Tenant(cfg)
	if err != nil {
		return err
	}
	if err := cfg.CheckSecrets("zoom"); err != nil {
		return err
	}
	if !webhook.MatchMAC(sha256.New, cfg.Secrets, [][]byte{got}, []byte("v0:"+ts+":"), req.Body) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured secret token matches %s", SignatureHeader)
	}
	return win.CheckUnix(ts, now)
}

// Sign sets the timestamp header to now and x-zm-signature with
// cfg.Secrets[0]. It returns an error wrapping webhook.ErrMisconfigured
// without secrets.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	return stamped.Sign(req, cfg, "zoom", now, func(secret, ts string) (string, error) {
		return prefix + hex.EncodeToString(webhook.MAC(sha256.New, []byte(secret), []byte("v0:"+ts+":"), req.Body)), nil
	})
}

// Handshake answers endpoint.url_validation, after Verify, with
// {"plainToken": …, "encryptedToken": hex HMAC-SHA256(secret token,
// plainToken)}, using the first secret (the current one). ok is false for
// every other request. It returns an error wrapping webhook.ErrMalformed
// when the validation has no plainToken.
func (Provider) Handshake(req *webhook.Request, cfg webhook.Config) (webhook.Reply, bool, error) {
	if req.Method != http.MethodPost {
		return webhook.Reply{}, false, nil
	}
	doc, err := jsonpath.Object(req.Body)
	if err != nil || jsonpath.Text(doc, "event") != "endpoint.url_validation" {
		return webhook.Reply{}, false, nil
	}
	plain := jsonpath.First(doc, "payload.plainToken")
	if plain == "" {
		return webhook.Reply{}, true, webhook.Errorf(webhook.ErrMalformed, "endpoint.url_validation has no payload.plainToken")
	}
	if err := cfg.CheckSecrets("zoom"); err != nil {
		return webhook.Reply{}, true, err
	}
	enc := hex.EncodeToString(webhook.MAC(sha256.New, []byte(cfg.Secrets[0]), []byte(plain)))
	body, _ := json.Marshal(map[string]string{"plainToken": plain, "encryptedToken": enc}) // strings always encode
	return webhook.Reply{Status: http.StatusOK, ContentType: "application/json", Body: string(body)}, true, nil
}

// Events returns the notification as one event. Zoom gives no event id;
// a retry sends the same body, so the key is the body's hash. The type is
// "event", the conversation the object's uuid (a meeting or webinar
// instance), else its id ("meeting:<uuid>"). It returns an error wrapping
// webhook.ErrMalformed when the body is not a JSON object.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	doc, err := jsonpath.Object(req.Body)
	if err != nil {
		return nil, err
	}
	typ := jsonpath.First(doc, "event")
	conv := jsonpath.First(doc, "payload.object.uuid", "payload.object.id")
	if conv != "" {
		kind, _, _ := strings.Cut(typ, ".")
		conv = kind + ":" + conv
	}
	headers := map[string]string{}
	if v := req.Header.Get("X-Zm-Trackingid"); v != "" {
		headers["x-zm-trackingid"] = v
	}
	return []webhook.Event{{Type: typ, Conversation: conv, Body: req.Body, Headers: headers}}, nil
}
