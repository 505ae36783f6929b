// Package twilio verifies and parses Twilio webhooks: Messaging, Voice and
// Conversations callbacks (form bodies, HMAC-SHA1 over the URL and the
// sorted parameters) and Event Streams sinks (JSON, signed through
// bodySHA256). docs/providers/twilio.md describes the scheme, the URL
// variants tried, the ids and conversations derived, and the settings.
package twilio

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // Twilio signs with HMAC-SHA1
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Provider implements webhook.Provider for Twilio.
type Provider struct{}

// Verify checks X-Twilio-Signature against every auth token. It returns an
// error wrapping webhook.ErrMissingSignature when the header is absent,
// webhook.ErrInvalidSignature when it is not base64, the body does not match
// bodySHA256, the form body cannot be parsed or no token matches, and
// webhook.ErrMisconfigured when base_url is unusable or there are no secrets.
//
// The URL variants are tried in order and the first that matches ends the
// search: which variant Twilio signed is no secret (the URL is public), and
// every token is still checked for each variant, in constant time, so timing
// tells nothing about the tokens or the signature.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	sig := strings.TrimSpace(req.Header.Get("X-Twilio-Signature"))
	if sig == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "X-Twilio-Signature header is required")
	}
	got, ok := webhook.DecodeBase64(base64.StdEncoding, sig)
	if !ok {
		return webhook.Errorf(webhook.ErrInvalidSignature, "X-Twilio-Signature is not base64")
	}
	u, err := signedURL(req.URL, cfg)
	if err != nil {
		return err
	}
	if err := cfg.CheckSecrets("twilio"); err != nil {
		return err
	}
	params := []string{""} // nothing is appended to a URL with bodySHA256
	if want, ok := bodyHash(u); ok {
		sum := sha256.Sum256(req.Body)
		if subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(strings.ToLower(want))) != 1 {
			return webhook.Errorf(webhook.ErrInvalidSignature, "body does not match bodySHA256")
		}
	} else {
		form, err := url.ParseQuery(string(req.Body))
		if err != nil {
			return webhook.Errorf(webhook.ErrInvalidSignature, "form body is not URL-encoded")
		}
		params = signedParams(form)
	}
	for _, variant := range urlVariants(u) {
		for _, p := range params {
			if webhook.MatchMAC(sha1.New, cfg.Secrets, [][]byte{got}, []byte(variant), []byte(p)) {
				return nil
			}
		}
	}
	return webhook.Errorf(webhook.ErrInvalidSignature, "no configured auth token matches X-Twilio-Signature")
}

// bodyHash returns the bodySHA256 query parameter of u.
func bodyHash(u string) (string, bool) {
	_, q, ok := strings.Cut(u, "?")
	if !ok {
		return "", false
	}
	vals, _ := url.ParseQuery(q)
	h, ok := vals["bodySHA256"]
	if !ok || len(h) == 0 {
		return "", false
	}
	return h[0], true
}

// signedParams returns what Twilio appends to the URL before signing a form:
// its fields sorted by name, the values of a repeated name sorted too, each
// name immediately followed by its value. Twilio's helper libraries
// disagree on repeated identical values (Python de-duplicates them, Node
// keeps them), so when the form has such duplicates both spellings are
// returned, the one that keeps them first.
func signedParams(form url.Values) []string {
	var all, dedup strings.Builder
	differ := false
	for _, k := range slices.Sorted(maps.Keys(form)) {
		vals := slices.Sorted(slices.Values(form[k]))
		for i, v := range vals {
			all.WriteString(k + v)
			if i > 0 && vals[i-1] == v {
				differ = true
				continue
			}
			dedup.WriteString(k + v)
		}
	}
	if differ {
		return []string{all.String(), dedup.String()}
	}
	return []string{all.String()}
}

// urlVariants returns u, u without its port and u with the scheme's default
// port, without duplicates, as Twilio's validators try them.
func urlVariants(u string) []string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return []string{u}
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo := ""
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, authority = authority[:i+1], authority[i+1:]
	}
	host, port := authority, ""
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.Contains(authority[i:], "]") {
		host, port = authority[:i], authority[i+1:]
	}
	def := map[string]string{"https": "443", "http": "80"}[strings.ToLower(scheme)]
	out := []string{u}
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	add(scheme + "://" + userinfo + host + tail)
	if port == "" && def != "" {
		add(scheme + "://" + userinfo + host + ":" + def + tail)
	}
	return out
}

// sidFields and statusFields are tried in order for the fallback id.
var (
	sidFields    = []string{"MessageSid", "SmsMessageSid", "SmsSid", "CallSid", "RecordingSid", "TranscriptionSid", "ParticipantSid", "ConversationSid"}
	statusFields = []struct{ field, kind string }{
		{"MessageStatus", "message"}, {"SmsStatus", "message"}, {"CallStatus", "call"},
		{"RecordingStatus", "recording"}, {"TranscriptionStatus", "transcription"},
	}
)

// Events returns the event(s) of a delivery: one for form bodies and JSON
// objects, one per CloudEvent for Event Streams batches. It returns an error
// wrapping webhook.ErrMalformed when a JSON body does not parse or a form
// body is not URL-encoded.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	token := req.Header.Get("I-Twilio-Idempotency-Token")
	headers := map[string]string{"content-type": req.Header.Get("Content-Type")}
	if token != "" {
		headers["i-twilio-idempotency-token"] = token
	}
	if body := bytes.TrimLeft(req.Body, " \t\r\n"); len(body) > 0 && (body[0] == '{' || body[0] == '[') {
		return jsonEvents(req.Body, token, headers)
	}
	form, err := url.ParseQuery(string(req.Body))
	if err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "form body is not URL-encoded")
	}
	return []webhook.Event{{
		ID:           formID(form.Get),
		TraceID:      token,
		Type:         formType(form.Get),
		Conversation: conversation(form.Get("ConversationSid"), form.Get("From"), form.Get("To")),
		Body:         req.Body,
		Headers:      headers,
	}}, nil
}

func formID(get func(string) string) string {
	sid := ""
	for _, f := range sidFields {
		if sid = get(f); sid != "" {
			break
		}
	}
	if sid == "" {
		return ""
	}
	qual := get("EventType")
	for _, s := range statusFields {
		if v := get(s.field); v != "" {
			qual = v
			break
		}
	}
	id := sid
	if qual != "" {
		id += ":" + qual
	}
	if seq := get("SequenceNumber"); seq != "" {
		id += ":" + seq
	}
	return id
}

func formType(get func(string) string) string {
	if t := get("EventType"); t != "" {
		return t
	}
	for _, s := range statusFields {
		if v := get(s.field); v != "" {
			return s.kind + "." + strings.ToLower(v)
		}
	}
	return ""
}

// conversation returns the ConversationSid, or the From/To pair sorted.
func conversation(convSid, from, to string) string {
	if convSid != "" {
		return convSid
	}
	from, to = strings.TrimSpace(from), strings.TrimSpace(to)
	if from == "" && to == "" {
		return ""
	}
	if to < from {
		from, to = to, from
	}
	return from + "|" + to
}

// jsonEvents handles Event Streams CloudEvents (an array, or one object) and
// other JSON bodies signed with bodySHA256.
func jsonEvents(body []byte, token string, headers map[string]string) ([]webhook.Event, error) {
	var items []json.RawMessage
	batch := json.Unmarshal(body, &items) == nil
	if !batch {
		items = []json.RawMessage{body}
	}
	evs := make([]webhook.Event, 0, len(items))
	for i, raw := range items {
		doc, err := jsonpath.Decode(raw)
		if err != nil {
			return nil, err
		}
		get := func(paths ...string) string {
			for _, p := range paths {
				if v := jsonpath.Text(doc, p); v != "" {
					return v
				}
			}
			return ""
		}
		trace := token
		if trace != "" && batch {
			trace += ":" + strconv.Itoa(i)
		}
		ev := webhook.Event{
			ID:      get("id", "sid"),
			TraceID: trace,
			Type:    get("type", "EventType"),
			Conversation: conversation(
				get("data.conversationSid", "data.ConversationSid", "conversationSid", "ConversationSid"),
				get("data.from", "data.From", "from", "From"),
				get("data.to", "data.To", "to", "To"),
			),
			Body:    raw,
			Headers: headers,
		}
		if !batch {
			ev.Body = body
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		return nil, webhook.Errorf(webhook.ErrMalformed, "JSON body holds no events")
	}
	return evs, nil
}

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
	if err := cfg.CheckSecrets("twilio"); err != nil {
		return err
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
	u, err := signedURL(req.URL, cfg)
	if err != nil {
		return err
	}
	mac := webhook.MAC(sha1.New, []byte(cfg.Secrets[0]), []byte(u), []byte(params))
	req.SetHeader("X-Twilio-Signature", base64.StdEncoding.EncodeToString(mac))
	return nil
}

// signedURL returns the URL Twilio signed for a request that arrived at raw
// (see the package comment). It returns an error wrapping
// webhook.ErrMisconfigured when "url" is not an absolute http(s) URL, or is
// set together with "base_url".
func signedURL(raw string, cfg webhook.Config) (string, error) {
	exact := cfg.Settings["url"]
	if exact == "" {
		return webhook.RebaseURL(raw, cfg.Settings["base_url"])
	}
	if err := checkURL(cfg); err != nil {
		return "", err
	}
	exact, _, _ = strings.Cut(exact, "#")
	base, query, _ := strings.Cut(exact, "?")
	if _, q, ok := strings.Cut(raw, "?"); ok {
		q, _, _ = strings.Cut(q, "#")
		query = q
	}
	if query == "" {
		return base, nil
	}
	return base + "?" + query, nil
}

// Check implements webhook.Checker: the tenant has secrets, sets no
// setting but "url" and "base_url", "url", when set, is an absolute http(s)
// URL without user information, and "base_url" is not set beside it. Errors
// wrap webhook.ErrMisconfigured and name the setting, never its value.
func (Provider) Check(cfg webhook.Config) error {
	if err := cfg.CheckSettings("twilio", nil, []string{"url", "base_url"}); err != nil {
		return err
	}
	if _, err := webhook.RebaseURL("https://h/", cfg.Settings["base_url"]); err != nil {
		return webhook.Errorf(webhook.ErrMisconfigured, "twilio: base_url is not an absolute http(s) URL without query")
	}
	return checkURL(cfg)
}

// checkURL checks "url" as Check describes.
func checkURL(cfg webhook.Config) error {
	exact := cfg.Settings["url"]
	if exact == "" {
		return nil
	}
	if cfg.Settings["base_url"] != "" {
		return webhook.Errorf(webhook.ErrMisconfigured, "twilio: set url (the exact URL configured in Twilio) or base_url, not both")
	}
	u, err := url.Parse(exact)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return webhook.Errorf(webhook.ErrMisconfigured, "twilio: url must be the absolute http(s) URL configured in Twilio's console")
	}
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
