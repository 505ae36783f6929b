// Package shopify verifies and parses Shopify webhook deliveries
// (X-Shopify-Hmac-Sha256 over the raw body, or the unprefixed headers of
// Events subscriptions). docs/providers/shopify.md describes the scheme,
// the ids and conversations derived, and the replay rules.
package shopify

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Provider implements webhook.Provider for Shopify.
type Provider struct{}

// header returns the X-Shopify-<name> header, or Shopify-<name>.
func header(req *webhook.Request, name string) string {
	if v := req.Header.Get("X-Shopify-" + name); v != "" {
		return v
	}
	return req.Header.Get("Shopify-" + name)
}

// Verify checks X-Shopify-Hmac-Sha256 against every secret. It returns an
// error wrapping webhook.ErrMissingSignature when the header is absent,
// webhook.ErrInvalidSignature when it is not base64 or no secret matches, and
// webhook.ErrMisconfigured when the tenant has no secrets.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	sig := strings.TrimSpace(header(req, "Hmac-Sha256"))
	if sig == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "X-Shopify-Hmac-Sha256 header is required")
	}
	got, ok := webhook.DecodeBase64(base64.StdEncoding, sig)
	if !ok {
		return webhook.Errorf(webhook.ErrInvalidSignature, "X-Shopify-Hmac-Sha256 is not base64")
	}
	if err := cfg.CheckSecrets("shopify"); err != nil {
		return err
	}
	if !webhook.MatchMAC(sha256.New, cfg.Secrets, [][]byte{got}, req.Body) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured secret matches X-Shopify-Hmac-Sha256")
	}
	return nil
}

// Events returns the single event of a delivery. It returns an error wrapping
// webhook.ErrMalformed when the topic or both ids are missing, or the body is
// not JSON.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	topic := header(req, "Topic")
	if topic == "" {
		return nil, webhook.Errorf(webhook.ErrMalformed, "X-Shopify-Topic header is required")
	}
	// Shopify's dashboard and support name a delivery by either id: the
	// trace id carries both ("<topic>:<event id>:<webhook id>"), so that
	// scripts/inspect finds the event by each (it matches every
	// ':'-separated part of the eventId the ingest logs).
	id := header(req, "Event-Id")
	if w := header(req, "Webhook-Id"); id == "" {
		id = w
	} else if w != "" && w != id {
		id += ":" + w
	}
	if id == "" {
		return nil, webhook.Errorf(webhook.ErrMalformed, "X-Shopify-Event-Id or X-Shopify-Webhook-Id header is required")
	}
	doc, err := jsonpath.Decode(req.Body)
	if err != nil {
		return nil, err
	}
	if _, ok := doc.(map[string]any); !ok {
		// Every Shopify payload is an object (a resource or a GraphQL
		// result); anything else is not one of its deliveries.
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a JSON object")
	}
	shop := header(req, "Shop-Domain")
	conv := shop
	if r := resource(doc, topic, header(req, "Resource-Id")); r != "" {
		conv = shop + "/" + r
	}
	return []webhook.Event{{
		TraceID:      topic + ":" + id,
		Type:         topic,
		Conversation: conv,
		Body:         req.Body,
		Headers: map[string]string{
			"content-type":          req.Header.Get("Content-Type"),
			"x-shopify-topic":       topic,
			"x-shopify-shop-domain": shop,
			"x-shopify-api-version": header(req, "Api-Version"),
			"x-shopify-webhook-id":  header(req, "Webhook-Id"),
			"x-shopify-event-id":    header(req, "Event-Id"),
		},
	}}, nil
}

// resource names what the event is about, as described in the package
// comment; "" when the body names nothing.
func resource(doc any, topic, resourceID string) string {
	if v := jsonpath.Text(doc, "order_id"); v != "" {
		return "Order/" + v
	}
	for _, gid := range [...]string{jsonpath.Text(doc, "admin_graphql_api_id"), resourceID} {
		if r := strings.TrimPrefix(gid, "gid://shopify/"); r != gid && r != "" {
			if i := strings.IndexByte(r, '?'); i >= 0 {
				r = r[:i]
			}
			return r
		}
	}
	if v := jsonpath.Text(doc, "id"); v != "" {
		kind, _, _ := strings.Cut(topic, "/")
		return kind + "/" + v
	}
	return ""
}

// Sign sets X-Shopify-Hmac-Sha256 to base64 HMAC-SHA256 of the raw body with
// cfg.Secrets[0]; a request that uses the unprefixed header spelling of
// Shopify's Events subscriptions (Shopify-Topic, …) gets
// Shopify-Hmac-Sha256 instead. Shopify signs no timestamp, so now is unused.
// It returns an error wrapping webhook.ErrMisconfigured when the tenant has
// no secrets.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	if err := cfg.CheckSecrets("shopify"); err != nil {
		return err
	}
	name := "X-Shopify-Hmac-Sha256"
	if req.Header.Get("X-Shopify-Topic") == "" && req.Header.Get("Shopify-Topic") != "" {
		name = "Shopify-Hmac-Sha256"
	}
	// Verify prefers the X- spelling, so a stale one must not survive.
	req.Header.Del("X-Shopify-Hmac-Sha256")
	req.Header.Del("Shopify-Hmac-Sha256")
	req.SetHeader(name, base64.StdEncoding.EncodeToString(webhook.MAC(sha256.New, []byte(cfg.Secrets[0]), req.Body)))
	return nil
}

// Check implements webhook.Checker: the tenant has secrets and no setting
// (the scheme takes none). Errors wrap webhook.ErrMisconfigured.
func (Provider) Check(cfg webhook.Config) error { return cfg.CheckSettings("shopify", nil, nil) }
