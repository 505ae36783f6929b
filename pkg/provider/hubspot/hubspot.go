// Package hubspot verifies and parses HubSpot webhooks (app webhook
// subscriptions) signed with the v3 scheme: HMAC-SHA256 under the app's
// client secret over method + request URI + body + timestamp, with the
// window HubSpot's own verifier keeps (5 minutes old, any time ahead). The
// URI is the public URL HubSpot called, as the twilio package rebuilds it.
// docs/providers/hubspot.md describes the scheme, ids, conversations and
// settings.
package hubspot

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Signature headers.
const (
	SignatureHeader = "X-HubSpot-Signature-v3"
	TimestampHeader = "X-HubSpot-Request-Timestamp"
)

// Retries is what HubSpot documents: a failed batch is retried up to 10
// times over 24 hours. Its own verifier, @hubspot/api-client's
// Signature.isValid, rejects a v3 timestamp older than 5 minutes
// (MAX_ALLOWED_TIMESTAMP) and none ahead of now, so its retries are signed
// when sent and hookpack follows that rule.
var Retries = webhook.Retries{
	Signing: webhook.ByRule,
	Horizon: 24 * time.Hour,
	Source:  "https://developers.hubspot.com/docs/api/webhooks#retries, @hubspot/api-client lib/src/utils/signature.js",
	Window:  webhook.Window{Past: 5 * time.Minute, Future: webhook.AnyFuture},
}

// Provider implements webhook.Provider, webhook.Signer and webhook.Checker
// for HubSpot.
type Provider struct{}

var (
	_ webhook.Provider = Provider{}
	_ webhook.Signer   = Provider{}
	_ webhook.Checker  = Provider{}
)

// Check reports a tenant entry without secrets, with an unknown setting or
// an unusable base_url.
func (Provider) Check(cfg webhook.Config) error {
	if err := cfg.CheckSettings("hubspot", nil, []string{"base_url"}); err != nil {
		return err
	}
	_, err := webhook.RebaseURL("https://h/", cfg.Settings["base_url"])
	return err
}

// decoder undoes the percent-encodings HubSpot's v3 docs list: the URI is
// signed with these characters decoded (and no others). It is built on
// first use, so a pack whose tenants have no HubSpot sender never builds it.
var decoder = sync.OnceValue(func() *strings.Replacer {
	return strings.NewReplacer(
		"%3A", ":", "%2F", "/", "%3F", "?", "%40", "@", "%21", "!", "%24", "$", "%27", "'",
		"%28", "(", "%29", ")", "%2A", "*", "%2C", ",", "%3B", ";",
		"%3a", ":", "%2f", "/", "%3f", "?", "%2a", "*", "%2c", ",", "%3b", ";",
	)
})

// signed returns the bytes HubSpot signs: method, URI (decoded as above),
// body, timestamp.
func signed(req *webhook.Request, cfg webhook.Config, ts string) ([][]byte, error) {
	u, err := webhook.RebaseURL(req.URL, cfg.Settings["base_url"])
	if err != nil {
		return nil, err
	}
	if !strings.Contains(u, "://") {
		return nil, webhook.Errorf(webhook.ErrMalformed, "hubspot: an absolute request URL is required")
	}
	method := req.Method
	if method == "" {
		method = http.MethodPost
	}
	return [][]byte{[]byte(method), []byte(decoder().Replace(u)), req.Body, []byte(ts)}, nil
}

// Verify checks X-HubSpot-Signature-v3 against every client secret, then
// the millisecond timestamp against Retries.Window. It returns an
// error wrapping webhook.ErrMissingSignature (a header is absent or the
// timestamp is not a number), webhook.ErrInvalidSignature (not base64, or no
// secret matches), webhook.ErrStale, or webhook.ErrMisconfigured (no
// secrets, a bad base_url).
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	sig, err := webhook.RequiredHeader(req, SignatureHeader)
	if err != nil {
		return err
	}
	ts := strings.TrimSpace(req.Header.Get(TimestampHeader))
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return webhook.Errorf(webhook.ErrMissingSignature, "%s must be Unix milliseconds", TimestampHeader)
	}
	got, ok := webhook.DecodeBase64(base64.StdEncoding, sig)
	if !ok {
		return webhook.Errorf(webhook.ErrInvalidSignature, "%s is not base64", SignatureHeader)
	}
	if err := cfg.CheckSecrets("hubspot"); err != nil {
		return err
	}
	parts, err := signed(req, cfg, ts)
	if err != nil {
		return err
	}
	if !webhook.MatchMAC(sha256.New, cfg.Secrets, [][]byte{got}, parts...) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured client secret matches %s", SignatureHeader)
	}
	return Retries.Window.Check(time.UnixMilli(ms), now)
}

// Sign sets X-HubSpot-Request-Timestamp to now in milliseconds and
// X-HubSpot-Signature-v3 over req.URL (rebased on base_url) with
// cfg.Secrets[0]. It returns an error wrapping webhook.ErrMisconfigured
// without secrets or with a bad base_url, and webhook.ErrMalformed when
// req.URL is not absolute.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	if err := cfg.CheckSecrets("hubspot"); err != nil {
		return err
	}
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	parts, err := signed(req, cfg, ts)
	if err != nil {
		return err
	}
	req.SetHeader(TimestampHeader, ts)
	req.SetHeader(SignatureHeader, base64.StdEncoding.EncodeToString(webhook.MAC(sha256.New, []byte(cfg.Secrets[0]), parts...)))
	return nil
}

// Events returns one event per notification of the batch. HubSpot's eventId
// "is not guaranteed to be unique", so the key is the hash of the
// notification without attemptNumber, the one field a retry changes; the
// type is subscriptionType, the conversation "<portalId>:<object
// type>:<objectId>" (contact.propertyChange of contact 123 in portal 62515:
// "62515:contact:123"). It returns an error wrapping webhook.ErrMalformed
// when the body is not a JSON array of objects.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(req.Body, &items); err != nil || len(items) == 0 {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a JSON array of notifications")
	}
	evs := make([]webhook.Event, 0, len(items))
	for i, raw := range items {
		doc, err := jsonpath.Object(raw)
		if err != nil {
			return nil, webhook.Errorf(webhook.ErrMalformed, "notification %d is not a JSON object", i)
		}
		m := doc.(map[string]any)
		delete(m, "attemptNumber")
		canonical, err := json.Marshal(m)
		if err != nil {
			return nil, webhook.Errorf(webhook.ErrMalformed, "notification %d: %v", i, err)
		}
		typ := jsonpath.First(doc, "subscriptionType")
		conv := ""
		if portal, obj := jsonpath.First(doc, "portalId"), jsonpath.First(doc, "objectId"); portal != "" && obj != "" {
			kind, _, _ := strings.Cut(typ, ".")
			conv = portal + ":" + kind + ":" + obj
		}
		evs = append(evs, webhook.Event{Type: typ, Conversation: conv, Body: raw, Defining: [][]byte{canonical}})
	}
	return evs, nil
}
