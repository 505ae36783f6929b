package twilio

import (
	"crypto/sha1" //nolint:gosec // Twilio signs with HMAC-SHA1
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

var _ webhook.Signer = Provider{}

// Sign sets X-Twilio-Signature to base64 HMAC-SHA1, under cfg.Secrets[0]
// (the auth token), of req.URL (rebased on the "base_url" setting, as Verify
// does) followed by the form parameters sorted by name. When req.URL carries
// a bodySHA256 query parameter (JSON bodies), Sign first sets it to the hex
// SHA-256 of the body, in req.URL and req.Query, and signs the URL alone.
// Twilio signs no timestamp, so now is unused.
//
// It returns an error wrapping webhook.ErrMalformed when req.URL is not
// absolute or a form body is not URL-encoded, and webhook.ErrMisconfigured
// when base_url is unusable or the tenant has no secrets.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "twilio: no secrets configured")
	}
	if !strings.Contains(req.URL, "://") {
		return webhook.Errorf(webhook.ErrMalformed, "twilio: an absolute request URL is required to sign")
	}
	params := ""
	if _, ok := bodyHash(req.URL); ok {
		sum := sha256.Sum256(req.Body)
		h := hex.EncodeToString(sum[:])
		req.URL = withBodyHash(req.URL, h)
		if req.Query != nil {
			req.Query.Set("bodySHA256", h)
		}
	} else {
		form, err := url.ParseQuery(string(req.Body))
		if err != nil {
			return webhook.Errorf(webhook.ErrMalformed, "form body is not URL-encoded")
		}
		params = signedParams(form)[0]
	}
	u, err := webhook.RebaseURL(req.URL, cfg.Settings["base_url"])
	if err != nil {
		return err
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	mac := webhook.MAC(sha1.New, []byte(cfg.Secrets[0]), []byte(u), []byte(params))
	req.Header.Set("X-Twilio-Signature", base64.StdEncoding.EncodeToString(mac))
	return nil
}

// withBodyHash returns u with the value of every bodySHA256 query parameter
// replaced by sum, leaving every other byte of the URL as it was (Twilio
// signs the URL byte for byte).
func withBodyHash(u, sum string) string {
	base, q, _ := strings.Cut(u, "?")
	q, frag, hasFrag := strings.Cut(q, "#")
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if k, _, _ := strings.Cut(p, "="); k == "bodySHA256" {
			parts[i] = k + "=" + sum
		}
	}
	out := base + "?" + strings.Join(parts, "&")
	if hasFrag {
		out += "#" + frag
	}
	return out
}
