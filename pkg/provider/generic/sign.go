package generic

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

var _ webhook.Signer = Provider{}

// Sign signs req the way the tenant's settings describe the sender: the
// template ("signed") expanded with the body, the URL (rebased on
// "base_url") and, when "timestamp_header" or "timestamp_param" is set, now
// in Unix seconds; HMAC with "algorithm" under cfg.Secrets[0]; encoded per
// "encoding" behind "prefix". The result goes into "header", either alone or,
// when "param" is set, as "<param>=<signature>" preceded by
// "<timestamp_param>=<now><separator>" when the timestamp travels in the
// list (Paddle's "ts=…;h1=…"). A "timestamp_header" is set to now. A
// "timestamp_json" timestamp lives in the body, which Sign never changes:
// Verify then checks the body's own value.
//
// It returns an error wrapping webhook.ErrMisconfigured when the settings
// cannot produce a signature (no header, unknown algorithm or encoding,
// timestamp_param without param, {timestamp} without a timestamp source, bad
// base_url) or the tenant has no secrets, and webhook.ErrMalformed when the
// template uses {url}, base_url is set and req.URL is not absolute.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	name := cfg.Settings["header"]
	if name == "" {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: setting \"header\" is required")
	}
	h, ok := webhook.Hash(cfg.Settings["algorithm"])
	if !ok {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: algorithm %q is not sha256, sha1 or sha512", cfg.Settings["algorithm"])
	}
	enc := cfg.Setting("encoding", "hex")
	if enc != "hex" && enc != "base64" {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: encoding %q is not hex or base64", enc)
	}
	param, tsHeader, tsParam := cfg.Settings["param"], cfg.Settings["timestamp_header"], cfg.Settings["timestamp_param"]
	// Verify prefers timestamp_header over timestamp_param.
	if tsHeader == "" && tsParam != "" && param == "" {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: timestamp_param needs param (the header must be a key=value list)")
	}
	ts := ""
	if tsHeader != "" || tsParam != "" {
		ts = strconv.FormatInt(now.Unix(), 10)
	}
	tmpl := cfg.Setting("signed", "{body}")
	if strings.Contains(tmpl, "{timestamp}") && ts == "" {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: template uses {timestamp} but no timestamp_header or timestamp_param is set")
	}
	u := req.URL
	if strings.Contains(tmpl, "{url}") {
		var err error
		if u, err = webhook.RebaseURL(req.URL, cfg.Settings["base_url"]); err != nil {
			return err
		}
	}
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: no secrets configured")
	}
	mac := webhook.MAC(h, []byte(cfg.Secrets[0]), signedParts(tmpl, req.Body, ts, u)...)
	sig := cfg.Settings["prefix"]
	if enc == "base64" {
		sig += base64.StdEncoding.EncodeToString(mac)
	} else {
		sig += hex.EncodeToString(mac)
	}
	if param != "" {
		sig = param + "=" + sig
		if tsHeader == "" && tsParam != "" {
			sig = tsParam + "=" + ts + cfg.Setting("separator", ",") + sig
		}
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set(name, sig)
	if tsHeader != "" {
		req.Header.Set(tsHeader, ts)
	}
	return nil
}
