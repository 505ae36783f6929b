package slack

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Slack's documented example, from "Verifying requests from Slack":
// https://api.slack.com/authentication/verifying-requests-from-slack
// (also docs.slack.dev/authentication/verifying-requests-from-slack).
const (
	docSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	docTS     = "1531420618"
	docBody   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	docSig    = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

var docAt = time.Unix(1531420618, 0)

// sign is the X-Slack-Signature of the documented construction.
func sign(secret, ts, body string) string {
	return "v0=" + hex.EncodeToString(providertest.MAC(sha256.New, secret, "v0:", ts, ":", body))
}

func request(sig, ts, contentType, body string) *webhook.Request {
	return providertest.Request(map[string]string{"X-Slack-Signature": sig, "X-Slack-Request-Timestamp": ts, "Content-Type": contentType}, body)
}

const callback = `{"type":"event_callback","event_id":"Ev1","team_id":"T1","event":{"type":"message","channel":"C1","ts":"1.2"}}`

func TestContract(t *testing.T) {
	const form, js = "application/x-www-form-urlencoded", "application/json"
	const challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
	post := func(contentType, body string) func() *webhook.Request {
		return func() *webhook.Request { return request("", "1", contentType, body) } // Sign replaces the timestamp
	}
	body := func(contentType, body string) func(*webhook.Request) {
		return func(r *webhook.Request) { r.Header.Set("Content-Type", contentType); r.Body = []byte(body) }
	}
	signed := []string{"X-Slack-Signature", "X-Slack-Request-Timestamp"}
	providertest.Run(t, providertest.Case{
		Provider:   Provider{},
		Request:    post(js, callback),
		Signature:  "X-Slack-Signature",
		Retries:    &Retries,
		OtherEvent: providertest.Replace("Ev1", "Ev2"),
		// Slack retries an Events API callback with the same event_id and
		// X-Slack-Retry-Num / X-Slack-Retry-Reason added
		// (https://api.slack.com/events-api, "Graceful retries"), signed
		// again with a new timestamp.
		Retry: func(r *webhook.Request) {
			r.Header.Set("X-Slack-Retry-Num", "1")
			r.Header.Set("X-Slack-Retry-Reason", "http_timeout")
		},
		Reused: providertest.Replace(`"ts":"1.2"`, `"ts":"1.3"`),
		Vectors: []providertest.Vector{
			{Name: "Slack docs", Request: func() *webhook.Request { return request(docSig, docTS, form, docBody) },
				Config: webhook.Config{Secrets: []string{docSecret}}, At: docAt, Headers: signed},
			// The slash command is the docs example as a delivery.
			providertest.SampleVector(t, "slack", "slash-command", signed...),
			providertest.SampleVector(t, "slack", "event-message", signed...),
			providertest.SampleVector(t, "slack", "url-verification", signed...),
		},
		Tampers: []providertest.Change{
			{Name: "timestamp moved", Apply: providertest.Header("X-Slack-Request-Timestamp", "1700000001")},
			{Name: "timestamp removed", Apply: providertest.Header("X-Slack-Request-Timestamp", ""), Want: webhook.ErrMissingSignature},
			{Name: "timestamp not a number", Apply: providertest.Header("X-Slack-Request-Timestamp", "now"), Want: webhook.ErrMissingSignature},
			{Name: "other version", Apply: func(r *webhook.Request) {
				r.Header.Set("X-Slack-Signature", "v1="+r.Header.Get("X-Slack-Signature")[3:])
			}},
			{Name: "not hex", Apply: providertest.Header("X-Slack-Signature", "v0=xyz")},
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: body(js, "{")},
			{Name: "not an object", Apply: body(js, "[1]")},
			{Name: "trailing data", Apply: body(js, callback+" {}")},
			{Name: "payload not JSON", Apply: body(form, "payload=%7B")},
			{Name: "payload with trailing data", Apply: body(form, url.Values{"payload": {`{"type":"block_actions"} x`}}.Encode())},
			{Name: "form not URL-encoded", Apply: body(form, "a=%zz")},
		},
		Handshakes: []providertest.Handshake{
			{Name: "url_verification", Signed: true, OK: true,
				Request: post(js, `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"`+challenge+`","type":"url_verification"}`),
				Reply:   webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Body: challenge}},
			{Name: "ssl_check", Signed: true, OK: true, Request: post(form, "ssl_check=1&token=x"),
				Reply: webhook.Reply{Status: http.StatusOK, ContentType: "text/plain"}},
			{Name: "slash command", Signed: true, Request: post(form, docBody)},
			{Name: "not JSON", Signed: true, Request: post(js, "{")},
			{Name: "url_verification with trailing data", Signed: true, Request: post(js, `{"type":"url_verification","challenge":"c"} x`)},
			{Name: "GET", Request: func() *webhook.Request { r := post("", "")(); r.Method = http.MethodGet; return r }},
		},
	})
}

func TestVerifySettings(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]string
		now  time.Time
		want error
	}{
		{"tolerance setting", map[string]string{"tolerance": "10m"}, docAt.Add(9 * time.Minute), nil},
		{"bad tolerance", map[string]string{"tolerance": "0"}, docAt, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Provider{}.Verify(request(docSig, docTS, "", docBody), webhook.Config{Secrets: []string{docSecret}, Settings: tt.set}, tt.now)
			if !errors.Is(err, tt.want) {
				t.Errorf("Verify(%v) = %v, want %v", tt.set, err, tt.want)
			}
		})
	}
}

func TestEvents(t *testing.T) {
	interactive := url.Values{"payload": {`{"type":"block_actions","team":{"id":"T9TK3CUKW"},"channel":{"id":"CBR2V3XEX"},"container":{"type":"message","message_ts":"1548261231.000200","channel_id":"CBR2V3XEX"},"trigger_id":"12466734323.1395872398"}`}}.Encode()
	tests := []struct {
		name        string
		contentType string
		body        string
		retry       string
		wantID      string
		wantType    string
		wantConv    string
	}{
		{"message", "application/json", `{"token":"XXYYZZ","team_id":"T123ABC456","api_app_id":"A123ABC456","event":{"type":"message","channel":"C2147483705","user":"U2147483697","text":"Hello world","ts":"1355517523.000005"},"type":"event_callback","event_id":"Ev08MFMKH6","event_time":1355517523}`, "", "Ev08MFMKH6", "message", "T123ABC456:C2147483705:1355517523.000005"},
		{"thread reply joins the parent", "application/json", `{"team_id":"T1","event":{"type":"message","channel":"C1","ts":"1355517599.000100","thread_ts":"1355517523.000005"},"type":"event_callback","event_id":"Ev2"}`, "", "Ev2", "message", "T1:C1:1355517523.000005"},
		{"retry keeps the event id", "application/json", `{"team_id":"T1","event":{"type":"app_mention","channel":"C1","ts":"1.2"},"type":"event_callback","event_id":"Ev3"}`, "1", "Ev3", "app_mention", "T1:C1:1.2"},
		{"edited message", "application/json", `{"team_id":"T1","event":{"type":"message","subtype":"message_changed","channel":"C1","ts":"9.9","message":{"ts":"1.2","text":"new"}},"type":"event_callback","event_id":"Ev4"}`, "", "Ev4", "message", "T1:C1:1.2"},
		{"reaction", "application/json", `{"team_id":"T1","event":{"type":"reaction_added","item":{"type":"message","channel":"C1","ts":"1.2"},"event_ts":"3.4"},"type":"event_callback","event_id":"Ev5"}`, "", "Ev5", "reaction_added", "T1:C1:1.2"},
		{"channel object", "application/json", `{"team_id":"T1","event":{"type":"channel_created","channel":{"id":"C9","name":"new"}},"type":"event_callback","event_id":"Ev6"}`, "", "Ev6", "channel_created", "T1:C9"},
		{"team event", "application/json", `{"team_id":"T1","event":{"type":"team_join","user":{"id":"U1"}},"type":"event_callback","event_id":"Ev7"}`, "", "Ev7", "team_join", "T1"},
		{"app_rate_limited has no id", "application/json", `{"token":"x","type":"app_rate_limited","team_id":"T1","minute_rate_limited":1518467820,"api_app_id":"A1"}`, "", "", "app_rate_limited", "T1"},
		{"slash command", "application/x-www-form-urlencoded", docBody, "", "", "slash_command", "T1DC2JH3J:G8PSS9T3V"},
		{"interactivity", "application/x-www-form-urlencoded", interactive, "", "", "block_actions", "T9TK3CUKW:CBR2V3XEX:1548261231.000200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request("", "", tt.contentType, tt.body)
			if tt.retry != "" {
				r.Header.Set("X-Slack-Retry-Num", tt.retry)
				r.Header.Set("X-Slack-Retry-Reason", "http_timeout")
			}
			ev := providertest.WantEvent(t, Provider{}, r, webhook.Config{}, webhook.Event{ID: tt.wantID, Type: tt.wantType, Conversation: tt.wantConv})
			if string(ev.Body) != tt.body {
				t.Error("Events() changed the body")
			}
			if tt.retry != "" && ev.Headers["x-slack-retry-num"] != tt.retry {
				t.Errorf("Events() headers = %v, want the retry number", ev.Headers)
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(docSig, docTS, []byte(docBody))
	f.Add("v0=", "0", []byte(""))
	f.Add("v0=zz", "-1", []byte("{}"))
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte) {
		err := Provider{}.Verify(request(sig, ts, "", string(body)), webhook.Config{Secrets: []string{"fuzz"}}, docAt)
		if err == nil && !strings.EqualFold(strings.TrimSpace(sig), sign("fuzz", strings.TrimSpace(ts), string(body))) {
			t.Fatalf("Verify(%q, %q) = nil without the real MAC", sig, ts)
		}
	})
}

func FuzzEvents(f *testing.F) {
	// Seeds of the former differential test against the encoding/json
	// implementation, which is now the implementation.
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
	f.Add("application/json", []byte(`{"team_id":"T1","event":{"type":"message","channel":{"id":1},"ts":2},"event_id":"Ev1"}`))
	f.Add("application/x-www-form-urlencoded", []byte(docBody))
	f.Add("application/x-www-form-urlencoded", []byte(`payload=%7B%22type%22%3A1%7D`))
	f.Add("", []byte(`ssl_check=1`))
	f.Add("text/plain", []byte(`null`))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		evs, err := Provider{}.Events(request("", "", contentType, string(body)), webhook.Config{})
		if err != nil && !errors.Is(err, webhook.ErrMalformed) {
			t.Fatalf("Events() error %v does not wrap ErrMalformed", err)
		}
		for _, ev := range evs {
			if ev.ID == "" && ev.Body == nil {
				t.Fatal("Events() returned an event with neither id nor body")
			}
		}
		r := request("", "", contentType, string(body))
		if _, _, err := (Provider{}).Handshake(r, webhook.Config{}); err != nil {
			t.Fatalf("Handshake() error = %v", err)
		}
	})
}
