package slack

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// legacyHandshake and legacyEvents are Handshake and Events as they were
// when they decoded bodies into a generic document (webhook.DecodeJSON, a
// json.Decoder) and read it with webhook.Field; FuzzMatchLegacy holds the
// single-pass versions to them.
func legacyHandshake(req *webhook.Request) (webhook.Reply, bool, error) {
	if req.Method != http.MethodPost {
		return webhook.Reply{}, false, nil
	}
	if isForm(req) {
		form, err := url.ParseQuery(string(req.Body))
		if err == nil && form.Get("ssl_check") == "1" {
			return webhook.Reply{Status: http.StatusOK, ContentType: "text/plain"}, true, nil
		}
		return webhook.Reply{}, false, nil
	}
	doc, err := webhook.DecodeJSON(req.Body)
	if err != nil || legacyField(doc, "type") != "url_verification" {
		return webhook.Reply{}, false, nil
	}
	return webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Body: legacyField(doc, "challenge")}, true, nil
}

func legacyEvents(req *webhook.Request) ([]webhook.Event, error) {
	headers := map[string]string{"content-type": req.Header.Get("Content-Type")}
	for _, h := range []string{"X-Slack-Retry-Num", "X-Slack-Retry-Reason"} {
		if v := req.Header.Get(h); v != "" {
			headers[strings.ToLower(h)] = v
		}
	}
	ev := webhook.Event{Body: req.Body, Headers: headers}
	if isForm(req) {
		form, err := url.ParseQuery(string(req.Body))
		if err != nil {
			return nil, webhook.Errorf(webhook.ErrMalformed, "form body is not URL-encoded")
		}
		if p := form.Get("payload"); p != "" {
			doc, err := webhook.DecodeJSON([]byte(p))
			if err != nil {
				return nil, err
			}
			ev.Type = legacyField(doc, "type")
			ev.Conversation = join(
				legacyFirst(doc, "team.id", "user.team_id", "enterprise.id"),
				legacyFirst(doc, "channel.id", "container.channel_id"),
				legacyFirst(doc, "container.thread_ts", "message.thread_ts", "container.message_ts", "message.ts"),
			)
			return []webhook.Event{ev}, nil
		}
		if form.Get("command") != "" {
			ev.Type = "slash_command"
		}
		ev.Conversation = join(form.Get("team_id"), form.Get("channel_id"), "")
		return []webhook.Event{ev}, nil
	}
	doc, err := webhook.DecodeJSON(req.Body)
	if err != nil {
		return nil, err
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a JSON object")
	}
	ev.ID = legacyField(doc, "event_id")
	ev.Type = legacyField(doc, "type")
	if t := legacyField(doc, "event.type"); t != "" {
		ev.Type = t
	}
	ev.Conversation = join(
		legacyFirst(doc, "team_id", "context_team_id", "enterprise_id"),
		legacyFirst(doc, "event.channel.id", "event.channel", "event.item.channel", "event.channel_id"),
		legacyFirst(doc, "event.thread_ts", "event.message.thread_ts", "event.previous_message.thread_ts",
			"event.message.ts", "event.previous_message.ts", "event.item.ts", "event.deleted_ts", "event.ts"),
	)
	return []webhook.Event{ev}, nil
}

func legacyField(doc any, path string) string {
	v, _ := webhook.Field(doc, path)
	return v
}

func legacyFirst(doc any, paths ...string) string {
	for _, p := range paths {
		if v := legacyField(doc, p); v != "" && v[0] != '{' && v[0] != '[' {
			return v
		}
	}
	return ""
}

func FuzzMatchLegacy(f *testing.F) {
	for _, seed := range []string{
		docBody,
		`{"type":"url_verification","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`,
		`{"type":"event_callback","event_id":"Ev1","team_id":"T1","event":{"type":"message","channel":"C1","ts":"1.2","thread_ts":"1.1"}}`,
		`{"type":"event_callback","event":{"type":"channel_rename","channel":{"id":"C2","name":"[x"}},"enterprise_id":"E1"}`,
		`{"event":{"channel":"[not an id","item":{"channel":5,"ts":1.5}},"team_id":{"a":1}}`,
		`{"type":"app_rate_limited","context_team_id":"T9"}`, `{"event_id":null,"type":true}`,
		`[]`, `null`, `"x"`, `{} x`, `{"type":"url_verification"} x`, ``,
	} {
		f.Add("application/json", []byte(seed))
	}
	for _, seed := range []string{
		url.Values{"payload": {`{"type":"block_actions","team":{"id":"T9"},"channel":{"id":"C9"},"container":{"message_ts":"1.5"}}`}}.Encode(),
		url.Values{"payload": {`[1]`}}.Encode(), url.Values{"payload": {`{"type":1} x`}}.Encode(),
		"command=%2Fx&team_id=T1&channel_id=C1", "ssl_check=1&token=x", "a=%zz", "",
	} {
		f.Add("application/x-www-form-urlencoded", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		req := &webhook.Request{Method: http.MethodPost, Header: http.Header{"Content-Type": {contentType}, "X-Slack-Retry-Num": {"1"}}, Body: body}
		doc := body
		if isForm(req) {
			form, _ := url.ParseQuery(string(body))
			doc = []byte(form.Get("payload"))
		}
		trailing := !json.Valid(doc) // json.Decoder stopped after the first value, Scan rejects what follows

		reply, ok, err := Provider{}.Handshake(req, webhook.Config{})
		wantReply, wantOK, wantErr := legacyHandshake(req)
		if (ok != wantOK || reply != wantReply || (err == nil) != (wantErr == nil)) && !(trailing && wantOK && !ok) {
			t.Fatalf("Handshake(%q) = %+v, %v, %v; legacy %+v, %v, %v", body, reply, ok, err, wantReply, wantOK, wantErr)
		}

		got, err := Provider{}.Events(req, webhook.Config{})
		want, wantErr := legacyEvents(req)
		if trailing && err != nil && wantErr == nil && errors.Is(err, webhook.ErrMalformed) {
			return
		}
		if (err == nil) != (wantErr == nil) || err != nil && !errors.Is(err, webhook.ErrMalformed) {
			t.Fatalf("Events(%q) error = %v, legacy %v", body, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Events(%q) = %+v, legacy %+v", body, got, want)
		}
	})
}
