package stripe

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

var _ webhook.Signer = Provider{}

// Sign sets Stripe-Signature to "t=<now>,v1=<hex>" with v1 = HMAC-SHA256 of
// "<t>.<body>" under cfg.Secrets[0], as Stripe signs for one endpoint secret
// (no legacy v0). It returns an error wrapping webhook.ErrMisconfigured when
// the tenant has no secrets.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "stripe: no secrets configured")
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := webhook.MAC(sha256New, []byte(cfg.Secrets[0]), []byte(ts+"."), req.Body)
	req.Header.Set("Stripe-Signature", "t="+ts+",v1="+hex.EncodeToString(mac))
	return nil
}
