package generic

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// legacyEvents is Events as it was when it decoded the body into a generic
// document (webhook.DecodeJSON, a json.Decoder) and read it with
// webhook.Field; FuzzEventsMatchLegacy holds the single-pass Events to it.
func legacyEvents(req *webhook.Request, cfg webhook.Config) ([]webhook.Event, error) {
	var doc any
	needJSON := cfg.Settings["defining"] != ""
	for _, k := range []string{"id", "type", "conversation"} {
		if strings.Contains(cfg.Settings[k], "json:") {
			needJSON = true
		}
	}
	if needJSON {
		d, err := webhook.DecodeJSON(req.Body)
		if err != nil {
			return nil, err
		}
		doc = d
	}
	ev := webhook.Event{Body: req.Body, Headers: map[string]string{"content-type": req.Header.Get("Content-Type")}}
	extract := func(src, what string) (string, error) {
		if src == "" {
			return "", nil
		}
		for _, alt := range strings.Split(src, "|") {
			kind, arg, _ := strings.Cut(strings.TrimSpace(alt), ":")
			var v string
			switch kind {
			case "header":
				v = req.Header.Get(arg)
			case "json":
				v, _ = webhook.Field(doc, arg)
			default:
				return "", webhook.Errorf(webhook.ErrMisconfigured, "hmac: %s source %q must start with header: or json:", what, alt)
			}
			if v != "" {
				return v, nil
			}
		}
		if what == "id" {
			return "", webhook.Errorf(webhook.ErrMalformed, "event id (%s) is missing", src)
		}
		return "", nil
	}
	var err error
	if ev.ID, err = extract(cfg.Settings["id"], "id"); err != nil {
		return nil, err
	}
	if ev.Type, err = extract(cfg.Settings["type"], "type"); err != nil {
		return nil, err
	}
	if ev.Conversation, err = extract(cfg.Settings["conversation"], "conversation"); err != nil {
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

// legacyTimestampJSON is how Verify read "timestamp_json" from a verified
// body before it scanned it.
func legacyTimestampJSON(body []byte, p string) (string, error) {
	doc, err := webhook.DecodeJSON(body)
	if err != nil {
		return "", webhook.Errorf(webhook.ErrMissingSignature, "body has no %s timestamp: not JSON", p)
	}
	v, ok := webhook.Field(doc, p)
	if !ok {
		return "", webhook.Errorf(webhook.ErrMissingSignature, "body has no %s timestamp", p)
	}
	return v, nil
}

var sentinels = []error{webhook.ErrMissingSignature, webhook.ErrInvalidSignature, webhook.ErrStale, webhook.ErrMalformed, webhook.ErrMisconfigured}

func sameSentinel(a, b error) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	for _, s := range sentinels {
		if errors.Is(a, s) != errors.Is(b, s) {
			return false
		}
	}
	return true
}

func FuzzEventsMatchLegacy(f *testing.F) {
	for _, seed := range []string{
		`{"event_id":"e","event_type":"t","data":{"customer_id":"c","id":"i"},"occurred_at":"2024-04-30T12:00:00Z"}`,
		`{"data":{"id":7,"items":[{"n":1.0},{"n":"<&>"}]},"webhookTimestamp":1714478400000}`,
		`{"event_id":{"b":1,"a":[true,null]},"ts":1.7144784e12}`, `[1,2]`, `null`, `"s"`, `{} x`, `not json`, ``,
	} {
		f.Add([]byte(seed), "json:event_id|header:X-Id", "json:event_type", "json:data.customer_id|json:data.id", "", "occurred_at")
		f.Add([]byte(seed), "", "header:X-Type|json:0", "json:data.items.1.n", "data.id, data.items ,x", "webhookTimestamp")
	}
	now := time.Date(2024, 4, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte, id, typ, conv, defining, tsPath string) {
		cfg := webhook.Config{Secrets: []string{"s"}, Settings: map[string]string{
			"header": "X-Sig", "id": id, "type": typ, "conversation": conv, "defining": defining, "timestamp_json": tsPath, "tolerance": "1h",
		}}
		r := req(map[string]string{"X-Id": "hid", "X-Type": "htype", "X-Sig": hexMAC("s", string(body))}, string(body))
		trailing := !json.Valid(body) // json.Decoder stopped after the first value, Scan rejects what follows

		got, err := Provider{}.Events(r, cfg)
		want, wantErr := legacyEvents(r, cfg)
		if !(trailing && errors.Is(err, webhook.ErrMalformed) && !errors.Is(wantErr, webhook.ErrMalformed)) {
			if !sameSentinel(err, wantErr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("Events(%q) = %+v, %v; legacy %+v, %v", body, got, err, want, wantErr)
			}
		}

		if tsPath == "" {
			return
		}
		err = Provider{}.Verify(r, cfg, now)
		ts, wantErr := legacyTimestampJSON(body, tsPath)
		if wantErr == nil {
			wantErr = checkTime(ts, now, time.Hour)
		}
		if trailing && errors.Is(err, webhook.ErrMissingSignature) {
			return
		}
		if !sameSentinel(err, wantErr) {
			t.Fatalf("Verify(%q) with timestamp_json %q = %v, legacy %v", body, tsPath, err, wantErr)
		}
	})
}
