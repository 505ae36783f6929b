package shopify

import (
	"encoding/base64"
	"net/http"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

var _ webhook.Signer = Provider{}

// Sign sets X-Shopify-Hmac-Sha256 to base64 HMAC-SHA256 of the raw body with
// cfg.Secrets[0]; a request that uses the unprefixed header spelling of
// Shopify's Events subscriptions (Shopify-Topic, …) gets
// Shopify-Hmac-Sha256 instead. Shopify signs no timestamp, so now is unused.
// It returns an error wrapping webhook.ErrMisconfigured when the tenant has
// no secrets.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "shopify: no secrets configured")
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	name := "X-Shopify-Hmac-Sha256"
	if req.Header.Get("X-Shopify-Topic") == "" && req.Header.Get("Shopify-Topic") != "" {
		name = "Shopify-Hmac-Sha256"
	}
	// Verify prefers the X- spelling, so a stale one must not survive.
	req.Header.Del("X-Shopify-Hmac-Sha256")
	req.Header.Del("Shopify-Hmac-Sha256")
	req.Header.Set(name, base64.StdEncoding.EncodeToString(webhook.MAC(sha256New, []byte(cfg.Secrets[0]), req.Body)))
	return nil
}
