package standardwebhooks

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

var _ webhook.Signer = Provider{}

// Sign sets webhook-timestamp to now (Unix seconds) and webhook-signature to
// "v1," + base64 HMAC-SHA256 of "{id}.{timestamp}.{body}" under the key of
// cfg.Secrets[0] ("whsec_" + base64, the prefix optional). The id is the
// request's own webhook-id; a request that uses the svix-* aliases keeps
// them (svix-timestamp, svix-signature).
//
// It returns an error wrapping webhook.ErrMalformed when the request has no
// webhook-id (or svix-id), and webhook.ErrMisconfigured when the tenant has
// no secrets or the first one is a "whpk_" public key, which can only
// verify.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	if req.Header == nil {
		req.Header = http.Header{}
	}
	id := header(req, "Id")
	if id == "" {
		return webhook.Errorf(webhook.ErrMalformed, "webhook-id header is required to sign")
	}
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "standardwebhooks: no secrets configured")
	}
	s := cfg.Secrets[0]
	if strings.HasPrefix(s, "whpk_") {
		return webhook.Errorf(webhook.ErrMisconfigured, "standardwebhooks: secret 1 is a whpk_ public key, which cannot sign")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	if err != nil || len(key) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "standardwebhooks: secret 1 is not whsec_ followed by base64")
	}
	family := "Webhook-"
	if strings.TrimSpace(req.Header.Get("Webhook-Id")) == "" {
		// svix-* aliases: Verify reads webhook-* first, so none may remain.
		family = "Svix-"
		req.Header.Del("Webhook-Timestamp")
		req.Header.Del("Webhook-Signature")
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := webhook.MAC(sha256New, key, []byte(id+"."+ts+"."), req.Body)
	req.Header.Set(family+"Timestamp", ts)
	req.Header.Set(family+"Signature", "v1,"+base64.StdEncoding.EncodeToString(mac))
	return nil
}
