// Package generic is a configurable HMAC verifier: a sender's scheme is
// described in settings, not coded — by the tenant for senders without a
// name (provider "hmac"), by a row of pkg/provider/catalog for the named
// ones (Paddle, Linear, Square, …). The settings and the replay rules they
// imply are in docs/providers/hmac.md.
package generic

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// DefaultTolerance applies when a timestamp is configured without tolerance.
const DefaultTolerance = 300 * time.Second

// Provider implements webhook.Provider for configurable HMAC schemes.
type Provider struct {
	// Window, when set, is a named sender's rule for its signed timestamp
	// (the catalog row's Retries.Window): a "tolerance" setting replaces
	// its Past only. Unset, "tolerance" (DefaultTolerance when not given)
	// applies in either direction.
	Window *webhook.Window
}

// Verify checks the configured signature header against every secret. It
// returns an error wrapping webhook.ErrMissingSignature (header, signature or
// timestamp absent), webhook.ErrInvalidSignature (nothing decodes or no secret
// matches), webhook.ErrStale (signed timestamp outside the tolerance) or
// webhook.ErrMisconfigured (settings unusable, no secrets).
func (p Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	name, h, enc, err := scheme(cfg)
	if err != nil {
		return err
	}
	raw := req.Header.Get(name)
	if raw == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "%s header is required", name)
	}
	var params map[string][]string // only schemes that list key=value pairs need it
	if cfg.Settings["param"] != "" || cfg.Settings["timestamp_param"] != "" {
		params = splitParams(raw, cfg.Setting("separator", ","))
	}
	sigs := []string{raw}
	if p := cfg.Settings["param"]; p != "" {
		sigs = params[p]
		if len(sigs) == 0 {
			return webhook.Errorf(webhook.ErrMissingSignature, "%s has no %s= value", name, p)
		}
	}
	// A sender may list several signatures (rotation); one that does not
	// decode must not hide another that does.
	var got [][]byte
	for _, s := range sigs {
		if b, ok := decodeSig(strings.TrimPrefix(strings.TrimSpace(s), cfg.Settings["prefix"]), enc); ok {
			got = append(got, b)
		}
	}
	if len(got) == 0 {
		return webhook.Errorf(webhook.ErrInvalidSignature, "%s is not %s", name, enc)
	}

	ts, err := timestamp(req, cfg, params)
	if err != nil {
		return err
	}
	parts, err := content(req, cfg, ts)
	if err != nil {
		return err
	}
	if !webhook.MatchMAC(h, cfg.Secrets, got, parts...) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured secret matches %s", name)
	}
	if p := cfg.Settings["timestamp_json"]; p != "" {
		doc, err := jsonpath.Decode(req.Body)
		if err != nil {
			return webhook.Errorf(webhook.ErrMissingSignature, "body has no %s timestamp: not JSON", p)
		}
		v, ok := jsonpath.Field(doc, p)
		if !ok {
			return webhook.Errorf(webhook.ErrMissingSignature, "body has no %s timestamp", p)
		}
		ts = v
	}
	if ts != "" {
		w, err := p.window(cfg)
		if err != nil {
			return err
		}
		return checkTime(ts, now, w)
	}
	return nil
}

// window returns the rule for a signed timestamp under cfg: the sender's
// Window with the tenant's "tolerance" as its Past, or that tolerance
// either way. It returns an error wrapping webhook.ErrMisconfigured when
// the setting is not a positive duration below webhook.MaxTolerance.
func (p Provider) window(cfg webhook.Config) (webhook.Window, error) {
	if p.Window != nil {
		return p.Window.Tenant(cfg)
	}
	tol, err := webhook.ParseTolerance(cfg.Settings["tolerance"], DefaultTolerance)
	return webhook.Symmetric(tol), err
}

// scheme reads the settings Verify and Sign share: the signature header,
// the hash and the encoding. It returns an error wrapping
// webhook.ErrMisconfigured when one is missing or unknown.
func scheme(cfg webhook.Config) (header string, h webhook.HashFunc, enc string, err error) {
	header = cfg.Settings["header"]
	if header == "" {
		return "", nil, "", webhook.Errorf(webhook.ErrMisconfigured, "hmac: setting \"header\" is required")
	}
	h, ok := webhook.Hash(cfg.Settings["algorithm"])
	if !ok {
		return "", nil, "", webhook.Errorf(webhook.ErrMisconfigured, "hmac: algorithm %q is not sha256, sha1 or sha512", cfg.Settings["algorithm"])
	}
	enc = cfg.Setting("encoding", "hex")
	if enc != "hex" && enc != "base64" {
		return "", nil, "", webhook.Errorf(webhook.ErrMisconfigured, "hmac: encoding %q is not hex or base64", enc)
	}
	return header, h, enc, nil
}

// decodeSig decodes one signature; ok is false when it is not valid in enc
// or is empty.
func decodeSig(s, enc string) ([]byte, bool) {
	switch enc {
	case "hex":
		b, err := hex.DecodeString(s)
		return b, err == nil && len(b) > 0
	case "base64":
		if b, ok := webhook.DecodeBase64(base64.StdEncoding, s); ok {
			return b, true
		}
		return webhook.DecodeBase64(base64.RawURLEncoding, strings.TrimRight(s, "="))
	}
	return nil, false
}

// splitParams parses "k=v<sep>k=v"; repeated keys keep every value.
func splitParams(raw, sep string) map[string][]string {
	out := map[string][]string{}
	for _, part := range strings.Split(raw, sep) {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok {
			k = strings.TrimSpace(k)
			out[k] = append(out[k], strings.TrimSpace(v))
		}
	}
	return out
}

func timestamp(req *webhook.Request, cfg webhook.Config, params map[string][]string) (string, error) {
	if h := cfg.Settings["timestamp_header"]; h != "" {
		ts := strings.TrimSpace(req.Header.Get(h))
		if ts == "" {
			return "", webhook.Errorf(webhook.ErrMissingSignature, "%s header is required", h)
		}
		return ts, nil
	}
	if p := cfg.Settings["timestamp_param"]; p != "" {
		if v := params[p]; len(v) > 0 && v[0] != "" {
			return v[0], nil
		}
		return "", webhook.Errorf(webhook.ErrMissingSignature, "signature header has no %s= timestamp", p)
	}
	return "", nil
}

// checkTime checks ts against w; it accepts Unix seconds, Unix
// milliseconds or RFC 3339.
func checkTime(ts string, now time.Time, w webhook.Window) error {
	if n, err := strconv.ParseInt(ts, 10, 64); err == nil {
		if n > 1e12 || n < -1e12 { // milliseconds
			n /= 1000
		}
		return w.Check(time.Unix(n, 0), now)
	}
	if f, err := strconv.ParseFloat(ts, 64); err == nil && strings.ContainsAny(ts, ".eE") {
		// JSON numbers such as 1.714478400e12 from timestamp_json.
		return checkTime(strconv.FormatFloat(f, 'f', 0, 64), now, w)
	}
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return webhook.Errorf(webhook.ErrMissingSignature, "timestamp is neither Unix time nor RFC 3339")
	}
	return w.Check(t.Truncate(time.Second), now)
}

// content returns the signed content for timestamp ts: the "signed"
// template expanded by signedParts, {url} rebased on "base_url". It returns
// an error wrapping webhook.ErrMisconfigured when the template needs a
// timestamp that is not configured, base_url is unusable or the tenant has
// no secrets, and webhook.ErrMalformed when {url} must be rebased and
// req.URL is not absolute.
func content(req *webhook.Request, cfg webhook.Config, ts string) ([][]byte, error) {
	tmpl := cfg.Setting("signed", "{body}")
	if strings.Contains(tmpl, "{timestamp}") && ts == "" {
		return nil, webhook.Errorf(webhook.ErrMisconfigured, "hmac: template uses {timestamp} but no timestamp_header or timestamp_param is set")
	}
	u := req.URL
	if strings.Contains(tmpl, "{url}") {
		var err error
		if u, err = webhook.RebaseURL(req.URL, cfg.Settings["base_url"]); err != nil {
			return nil, err
		}
	}
	if err := cfg.CheckSecrets("hmac"); err != nil {
		return nil, err
	}
	return signedParts(tmpl, req.Body, ts, u), nil
}

// signedParts expands the template into byte slices without copying the body.
// Only {body}, {timestamp} and {url} are placeholders; every other byte,
// including braces around other words, is literal.
func signedParts(tmpl string, body []byte, ts, u string) [][]byte {
	var parts [][]byte
	lit := 0 // start of the pending literal run
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] != '{' {
			continue
		}
		var v []byte
		n := 0
		switch {
		case strings.HasPrefix(tmpl[i:], "{body}"):
			v, n = body, len("{body}")
		case strings.HasPrefix(tmpl[i:], "{timestamp}"):
			v, n = []byte(ts), len("{timestamp}")
		case strings.HasPrefix(tmpl[i:], "{url}"):
			v, n = []byte(u), len("{url}")
		default:
			continue
		}
		if i > lit {
			parts = append(parts, []byte(tmpl[lit:i]))
		}
		parts = append(parts, v)
		i += n - 1
		lit = i + 1
	}
	if lit < len(tmpl) {
		parts = append(parts, []byte(tmpl[lit:]))
	}
	return parts
}

// Events returns the single event of a delivery, with id, type and
// conversation taken from where the settings say, and the "defining" fields
// (the key without a signed id, and the payload digest). It returns an error
// wrapping webhook.ErrMalformed when a JSON source is configured and the body
// is not JSON, or the configured id is missing, and webhook.ErrMisconfigured
// when a source has no "header:" or "json:" kind.
func (Provider) Events(req *webhook.Request, cfg webhook.Config) ([]webhook.Event, error) {
	var doc any
	needJSON := cfg.Settings["defining"] != ""
	for _, k := range [...]string{"id", "type", "conversation"} {
		if strings.Contains(cfg.Settings[k], "json:") {
			needJSON = true
		}
	}
	var err error
	if needJSON {
		if doc, err = jsonpath.Decode(req.Body); err != nil {
			return nil, err
		}
	}
	ev := webhook.Event{Body: req.Body, Headers: map[string]string{"content-type": req.Header.Get("Content-Type")}}
	var kind string
	if ev.ID, kind, err = extract(req, doc, cfg.Settings["id"], "id"); err != nil {
		return nil, err
	}
	if kind == "header" {
		// No header is signed: an id from one is for tracing only, the
		// key falls back to the content hash.
		ev.ID, ev.TraceID = "", ev.ID
	}
	if ev.Type, _, err = extract(req, doc, cfg.Settings["type"], "type"); err != nil {
		return nil, err
	}
	if ev.Conversation, _, err = extract(req, doc, cfg.Settings["conversation"], "conversation"); err != nil {
		return nil, err
	}
	// The defining fields make the key when the id is not signed, and the
	// payload digest whenever they are set: a sender that renders every
	// attempt again (Intercom's delivery_attempts, first_sent_at) would
	// otherwise have its own retry of a json: id answered 409 "id reused".
	if d := cfg.Settings["defining"]; d != "" {
		for path := range strings.SplitSeq(d, ",") {
			ev.Defining = append(ev.Defining, []byte(jsonpath.Text(doc, strings.TrimSpace(path))))
		}
	}
	return []webhook.Event{ev}, nil
}

// extract resolves "header:Name" or "json:path", or several of them separated
// by "|", the first non-empty winning. A configured source that yields
// nothing is a malformed delivery for id (the key must be stable), and empty
// for type and conversation.
func extract(req *webhook.Request, doc any, src, what string) (v, kind string, err error) {
	if src == "" {
		return "", "", nil
	}
	for alt := range strings.SplitSeq(src, "|") {
		kind, arg, _ := strings.Cut(strings.TrimSpace(alt), ":")
		switch kind {
		case "header":
			v = req.Header.Get(arg)
		case "json":
			v = jsonpath.Text(doc, arg)
		default:
			return "", "", webhook.Errorf(webhook.ErrMisconfigured, "hmac: %s source %q must start with header: or json:", what, alt)
		}
		if v != "" {
			return v, kind, nil
		}
	}
	if what == "id" {
		return "", "", webhook.Errorf(webhook.ErrMalformed, "event id (%s) is missing", src)
	}
	return "", "", nil
}

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
	name, h, enc, err := scheme(cfg)
	if err != nil {
		return err
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
	parts, err := content(req, cfg, ts)
	if err != nil {
		return err
	}
	mac := webhook.MAC(h, []byte(cfg.Secrets[0]), parts...)
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
	req.SetHeader(name, sig)
	if tsHeader != "" {
		req.SetHeader(tsHeader, ts)
	}
	return nil
}

// Settings are the setting keys of the scheme (docs/providers/hmac.md).
var Settings = []string{
	"header", "algorithm", "encoding", "prefix", "param", "separator", "signed", "base_url",
	"timestamp_header", "timestamp_param", "timestamp_json", "tolerance",
	"id", "type", "conversation", "defining",
}

// Check implements webhook.Checker: every setting is one of Settings,
// "header" is set, the algorithm and encoding are known, a {timestamp} in
// the template has a source, "timestamp_param" comes with "param", the id,
// type and conversation sources start with header: or json:, and base_url
// is an absolute http(s) URL. Errors wrap webhook.ErrMisconfigured and name
// the setting, never a value beyond the algorithm's or encoding's name.
func (Provider) Check(cfg webhook.Config) error {
	if err := cfg.CheckSettings("hmac", []string{"header"}, Settings[1:]); err != nil {
		return err
	}
	if _, _, _, err := scheme(cfg); err != nil {
		return err
	}
	s := cfg.Settings
	if s["timestamp_param"] != "" && s["param"] == "" && s["timestamp_header"] == "" {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: timestamp_param needs param (the header must be a key=value list)")
	}
	if strings.Contains(s["signed"], "{timestamp}") && s["timestamp_header"] == "" && s["timestamp_param"] == "" {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: template uses {timestamp} but no timestamp_header or timestamp_param is set")
	}
	for _, k := range [...]string{"id", "type", "conversation"} {
		if _, _, err := extract(&webhook.Request{}, nil, s[k], k); errors.Is(err, webhook.ErrMisconfigured) {
			return err
		}
	}
	if _, err := webhook.RebaseURL("https://h/", s["base_url"]); err != nil {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: base_url is not an absolute http(s) URL without query")
	}
	return nil
}
