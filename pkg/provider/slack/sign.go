package slack

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

var _ webhook.Signer = Provider{}

// Sign sets X-Slack-Request-Timestamp to now (Unix seconds) and
// X-Slack-Signature to "v0=" + hex HMAC-SHA256 of "v0:<timestamp>:<body>"
// under cfg.Secrets[0], the app's signing secret. It returns an error
// wrapping webhook.ErrMisconfigured when the tenant has no secrets.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "slack: no secrets configured")
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := webhook.MAC(sha256New, []byte(cfg.Secrets[0]), []byte("v0:"+ts+":"), req.Body)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", prefix+hex.EncodeToString(mac))
	return nil
}
