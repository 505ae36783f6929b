package whatsapp

import (
	"encoding/hex"
	"net/http"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

var _ webhook.Signer = Provider{}

// Sign sets X-Hub-Signature-256 to "sha256=" + hex HMAC-SHA256 of the raw
// body with cfg.Secrets[0] (the app secret), as Meta signs its POSTs. The
// GET verification handshake is unsigned: it carries the verify_token
// setting in its query instead. Meta signs no timestamp, so now is unused.
// It returns an error wrapping webhook.ErrMisconfigured when the tenant has
// no secrets.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "whatsapp: no secrets configured")
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("X-Hub-Signature-256", prefix+hex.EncodeToString(webhook.MAC(sha256New, []byte(cfg.Secrets[0]), req.Body)))
	return nil
}
