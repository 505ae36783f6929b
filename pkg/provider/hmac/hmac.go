// Package hmac is a configurable HMAC verifier for providers without a named
// adapter (Paddle, Square, Linear, Intercom, Zendesk, in-house senders …):
// their scheme is described in the tenant's settings, not coded.
//
// Settings (all strings):
//
//	header            signature header name (required)
//	algorithm         sha256 (default) | sha1 | sha512
//	encoding          hex (default) | base64
//	prefix            literal prefix before the signature, e.g. "sha256="
//	param             when the header is a key=value list, the key holding
//	                  the signature ("h1" for Paddle's "ts=…;h1=…")
//	separator         separator of that list (default ",")
//	signed            template of the signed content (default "{body}"):
//	                  {body}, {timestamp}, {url} are substituted
//	timestamp_header  header carrying the timestamp (Unix seconds or RFC 3339)
//	timestamp_param   key of the timestamp inside the signature header list
//	tolerance         allowed clock skew (default 300s) when a timestamp is used
//	id                where the event id comes from: "header:Name" or
//	                  "json:path.to.field"; empty means content hash
//	type              same syntax, for the event type
//	conversation      same syntax, for the ordering key
//	defining          comma-separated JSON paths hashed when there is no id
//	                  (default: the whole body)
package hmac

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// DefaultTolerance applies when a timestamp is configured without tolerance.
const DefaultTolerance = 300 * time.Second

// Provider implements webhook.Provider for configurable HMAC schemes.
type Provider struct{}

var _ webhook.Provider = Provider{}

// Verify checks the configured signature header against every secret.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	name := cfg.Settings["header"]
	if name == "" {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: setting \"header\" is required")
	}
	h, ok := webhook.Hash(cfg.Settings["algorithm"])
	if !ok {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: algorithm %q is not sha256, sha1 or sha512", cfg.Settings["algorithm"])
	}
	raw := req.Header.Get(name)
	if raw == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "%s header is required", name)
	}
	params := splitParams(raw, cfg.Setting("separator", ","))
	sigs := []string{raw}
	if p := cfg.Settings["param"]; p != "" {
		sigs = params[p]
		if len(sigs) == 0 {
			return webhook.Errorf(webhook.ErrMissingSignature, "%s has no %s= value", name, p)
		}
	}
	var got [][]byte
	for _, s := range sigs {
		b, err := decodeSig(strings.TrimPrefix(strings.TrimSpace(s), cfg.Settings["prefix"]), cfg.Setting("encoding", "hex"))
		if err != nil {
			return err
		}
		got = append(got, b)
	}

	ts, err := timestamp(req, cfg, params)
	if err != nil {
		return err
	}
	tmpl := cfg.Setting("signed", "{body}")
	if strings.Contains(tmpl, "{timestamp}") && ts == "" {
		return webhook.Errorf(webhook.ErrMisconfigured, "hmac: template uses {timestamp} but no timestamp_header or timestamp_param is set")
	}
	parts := signedParts(tmpl, req, ts)
	matched := false
	for _, s := range cfg.Secrets {
		mac := webhook.MAC(h, []byte(s), parts...)
		for _, g := range got {
			if webhook.MatchAny(mac, [][]byte{g}) {
				matched = true
			}
		}
	}
	if !matched {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured secret matches %s", name)
	}
	if ts != "" {
		tol, err := webhook.ParseTolerance(cfg.Settings["tolerance"], DefaultTolerance)
		if err != nil {
			return err
		}
		return checkTime(ts, now, tol)
	}
	return nil
}

func decodeSig(s, enc string) ([]byte, error) {
	var b []byte
	var err error
	switch enc {
	case "hex":
		b, err = hex.DecodeString(strings.ToLower(s))
	case "base64":
		b, err = base64.StdEncoding.DecodeString(s)
		if err != nil {
			b, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
		}
	default:
		return nil, webhook.Errorf(webhook.ErrMisconfigured, "hmac: encoding %q is not hex or base64", enc)
	}
	if err != nil {
		return nil, webhook.Errorf(webhook.ErrInvalidSignature, "signature is not %s", enc)
	}
	return b, nil
}

// splitParams parses "k=v<sep>k=v"; repeated keys keep every value.
func splitParams(raw, sep string) map[string][]string {
	out := map[string][]string{}
	for _, part := range strings.Split(raw, sep) {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok {
			out[k] = append(out[k], v)
		}
	}
	return out
}

func timestamp(req *webhook.Request, cfg webhook.Config, params map[string][]string) (string, error) {
	if h := cfg.Settings["timestamp_header"]; h != "" {
		ts := req.Header.Get(h)
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

// checkTime accepts Unix seconds, Unix milliseconds or RFC 3339.
func checkTime(ts string, now time.Time, tol time.Duration) error {
	if n, err := strconv.ParseInt(ts, 10, 64); err == nil {
		if n > 1e12 { // milliseconds
			n /= 1000
		}
		_, err := webhook.CheckTimestamp(strconv.FormatInt(n, 10), now, tol)
		return err
	}
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return webhook.Errorf(webhook.ErrMissingSignature, "timestamp is neither Unix time nor RFC 3339")
	}
	_, err = webhook.CheckTimestamp(strconv.FormatInt(t.Unix(), 10), now, tol)
	return err
}

// signedParts expands the template into byte slices without copying the body.
func signedParts(tmpl string, req *webhook.Request, ts string) [][]byte {
	var parts [][]byte
	for tmpl != "" {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			parts = append(parts, []byte(tmpl))
			break
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			parts = append(parts, []byte(tmpl))
			break
		}
		if i > 0 {
			parts = append(parts, []byte(tmpl[:i]))
		}
		switch tmpl[i : i+j+1] {
		case "{body}":
			parts = append(parts, req.Body)
		case "{timestamp}":
			parts = append(parts, []byte(ts))
		case "{url}":
			parts = append(parts, []byte(req.URL))
		default:
			parts = append(parts, []byte(tmpl[i:i+j+1]))
		}
		tmpl = tmpl[i+j+1:]
	}
	return parts
}

// Events returns the single event of a delivery, with id, type and
// conversation taken from where the settings say.
func (Provider) Events(req *webhook.Request, cfg webhook.Config) ([]webhook.Event, error) {
	var doc any
	needJSON := false
	for _, k := range []string{"id", "type", "conversation"} {
		if strings.HasPrefix(cfg.Settings[k], "json:") {
			needJSON = true
		}
	}
	if cfg.Settings["defining"] != "" {
		needJSON = true
	}
	if needJSON {
		d, err := webhook.DecodeJSON(req.Body)
		if err != nil {
			return nil, err
		}
		doc = d
	}
	ev := webhook.Event{Body: req.Body, Headers: map[string]string{"content-type": req.Header.Get("Content-Type")}}
	var err error
	if ev.ID, err = extract(req, doc, cfg.Settings["id"], "id"); err != nil {
		return nil, err
	}
	if ev.Type, err = extract(req, doc, cfg.Settings["type"], "type"); err != nil {
		return nil, err
	}
	if ev.Conversation, err = extract(req, doc, cfg.Settings["conversation"], "conversation"); err != nil {
		return nil, err
	}
	if d := cfg.Settings["defining"]; d != "" && ev.ID == "" {
		for _, path := range strings.Split(d, ",") {
			v, _ := webhook.Field(doc, strings.TrimSpace(path))
			ev.Defining = append(ev.Defining, []byte(v))
		}
	}
	return []webhook.Event{ev}, nil
}

// extract resolves "header:Name" or "json:path". A configured source that
// yields nothing is a malformed delivery for id (the key must be stable), and
// empty for type and conversation.
func extract(req *webhook.Request, doc any, src, what string) (string, error) {
	if src == "" {
		return "", nil
	}
	kind, arg, _ := strings.Cut(src, ":")
	var v string
	switch kind {
	case "header":
		v = req.Header.Get(arg)
	case "json":
		v, _ = webhook.Field(doc, arg)
	default:
		return "", webhook.Errorf(webhook.ErrMisconfigured, "hmac: %s source %q must start with header: or json:", what, src)
	}
	if v == "" && what == "id" {
		return "", webhook.Errorf(webhook.ErrMalformed, "event id (%s) is missing", src)
	}
	return v, nil
}
