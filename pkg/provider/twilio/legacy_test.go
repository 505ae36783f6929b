package twilio

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// legacyVerify and legacyEvents are Verify and Events as they were before
// the hot path was tuned (every candidate MAC computed, parameter strings
// built with strings.Builder, JSON decoded into a generic document);
// FuzzMatchLegacy holds the tuned versions to them.
func legacyVerify(req *webhook.Request, cfg webhook.Config) error {
	sig := strings.TrimSpace(req.Header.Get("X-Twilio-Signature"))
	if sig == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "X-Twilio-Signature header is required")
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(got) == 0 {
		return webhook.Errorf(webhook.ErrInvalidSignature, "X-Twilio-Signature is not base64")
	}
	u, err := webhook.RebaseURL(req.URL, cfg.Settings["base_url"])
	if err != nil {
		return err
	}
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "twilio: no secrets configured")
	}
	var params []string
	if want, ok := legacyBodyHash(u); ok {
		sum := sha256.Sum256(req.Body)
		if subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(strings.ToLower(want))) != 1 {
			return webhook.Errorf(webhook.ErrInvalidSignature, "body does not match bodySHA256")
		}
		params = []string{""}
	} else {
		form, err := url.ParseQuery(string(req.Body))
		if err != nil {
			return webhook.Errorf(webhook.ErrInvalidSignature, "form body is not URL-encoded")
		}
		params = legacyParamStrings(form)
	}
	var cands [][]byte
	for _, variant := range urlVariants(u) {
		for _, p := range params {
			for _, s := range cfg.Secrets {
				cands = append(cands, webhook.MAC(sha1.New, []byte(s), []byte(variant), []byte(p)))
			}
		}
	}
	if !webhook.MatchAny(got, cands) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured auth token matches X-Twilio-Signature")
	}
	return nil
}

func legacyBodyHash(u string) (string, bool) {
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

// paramStrings is legacyParamStrings, under the name FuzzVerify uses.
func paramStrings(form url.Values) []string { return legacyParamStrings(form) }

func legacyParamStrings(form url.Values) []string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var all, dedup strings.Builder
	differ := false
	for _, k := range keys {
		vals := append([]string(nil), form[k]...)
		sort.Strings(vals)
		for i, v := range vals {
			all.WriteString(k)
			all.WriteString(v)
			if i > 0 && vals[i-1] == v {
				differ = true
				continue
			}
			dedup.WriteString(k)
			dedup.WriteString(v)
		}
	}
	if differ {
		return []string{all.String(), dedup.String()}
	}
	return []string{all.String()}
}

func legacyEvents(req *webhook.Request) ([]webhook.Event, error) {
	token := req.Header.Get("I-Twilio-Idempotency-Token")
	headers := map[string]string{"content-type": req.Header.Get("Content-Type")}
	if token != "" {
		headers["i-twilio-idempotency-token"] = token
	}
	body := strings.TrimLeft(string(req.Body), " \t\r\n")
	if strings.HasPrefix(body, "{") || strings.HasPrefix(body, "[") {
		return legacyJSONEvents(req.Body, token, headers)
	}
	form, err := url.ParseQuery(string(req.Body))
	if err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "form body is not URL-encoded")
	}
	get := func(k string) string { return form.Get(k) }
	return []webhook.Event{{
		ID: formID(get, token), Type: formType(get), Conversation: conversation(get("ConversationSid"), get("From"), get("To")),
		Body: req.Body, Headers: headers,
	}}, nil
}

func legacyJSONEvents(body []byte, token string, headers map[string]string) ([]webhook.Event, error) {
	var items []json.RawMessage
	batch := true
	if err := json.Unmarshal(body, &items); err != nil {
		batch = false
		items = []json.RawMessage{body}
	}
	evs := make([]webhook.Event, 0, len(items))
	for i, raw := range items {
		doc, err := webhook.DecodeJSON(raw)
		if err != nil {
			return nil, err
		}
		get := func(paths ...string) string {
			for _, p := range paths {
				if v, ok := webhook.Field(doc, p); ok && v != "" {
					return v
				}
			}
			return ""
		}
		id := get("id", "sid")
		if id == "" && token != "" {
			id = token
			if batch {
				id += ":" + strconv.Itoa(i)
			}
		}
		ev := webhook.Event{
			ID: id, Type: get("type", "EventType"),
			Conversation: conversation(
				get("data.conversationSid", "data.ConversationSid", "conversationSid", "ConversationSid"),
				get("data.from", "data.From", "from", "From"),
				get("data.to", "data.To", "to", "To"),
			),
			Body: raw, Headers: headers,
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

func FuzzMatchLegacy(f *testing.F) {
	form := docParams().Encode()
	f.Add(docURL, docExpected, []byte(form), "", "12345")
	f.Add(docURL+"&bodySHA256="+docBodyHash, docBodySig, []byte(docBody), "", "12345")
	f.Add("https://x:1/?bodySHA256=", "AAAA", []byte(""), "", "12345")
	f.Add("https://x/p?%62odySHA256=ab", "AAAA", []byte("a=1"), "tok", "12345")
	f.Add("https://h.example:443/twilio", sign("12345", "https://h.example/twilio", "a1a1b2"), []byte("a=1&b=2&a=1"), "", "12345")
	f.Add("https://h.example/twilio", sign("12345", "https://h.example:443/twilio", "a1a1b2"), []byte("a=1&b=2&a=1"), "", "12345")
	f.Add(docURL, sign("12345", docURL, "a1b2"), []byte("b=2&a=1"), "", "other|12345")
	f.Add(docURL, "", []byte(`[{"id":"EZ1","type":"t","data":{"from":"a","to":"b"}},3,null]`), "tok", "12345")
	f.Add(docURL, "", []byte(`{"sid":"x","data":{"ConversationSid":"CH1"}} x`), "tok", "12345")
	f.Add(docURL, "", []byte(`[] x`), "tok", "12345")
	f.Add(docURL, "", []byte(`null`), "", "12345")
	f.Add(docURL, "", []byte("MessageSid=SM1&MessageStatus=sent&From=a&To=b&x=%zz"), "", "12345")
	f.Fuzz(func(t *testing.T, u, sig string, body []byte, token, secrets string) {
		r := request(u, sig, string(body))
		r.Header.Set("I-Twilio-Idempotency-Token", token)
		cfg := webhook.Config{Secrets: strings.Split(secrets, "|")}
		if err, want := (Provider{}).Verify(r, cfg, time.Now()), legacyVerify(r, cfg); (err == nil) != (want == nil) || !sameSentinel(err, want) {
			t.Fatalf("Verify(%q, %q, %q) = %v, legacy %v", u, sig, body, err, want)
		}

		got, err := Provider{}.Events(r, webhook.Config{})
		want, wantErr := legacyEvents(r)
		trimmed := strings.TrimLeft(string(body), " \t\r\n")
		isJSON := strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[")
		if isJSON && !json.Valid(body) && errors.Is(err, webhook.ErrMalformed) {
			return // trailing data after the JSON value: json.Decoder stopped before it, Scan rejects it
		}
		if !sameSentinel(err, wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("Events(%q) = %+v, %v; legacy %+v, %v", body, got, err, want, wantErr)
		}
	})
}

func sameSentinel(a, b error) bool {
	for _, s := range []error{webhook.ErrMissingSignature, webhook.ErrInvalidSignature, webhook.ErrMalformed, webhook.ErrMisconfigured} {
		if errors.Is(a, s) != errors.Is(b, s) {
			return false
		}
	}
	return (a == nil) == (b == nil)
}
