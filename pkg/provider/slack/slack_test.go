package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

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

func sign(secret, ts, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + ts + ":" + body))
	return prefix + hex.EncodeToString(m.Sum(nil))
}

func request(sig, ts, contentType, body string) *webhook.Request {
	h := http.Header{}
	if sig != "" {
		h.Set("X-Slack-Signature", sig)
	}
	if ts != "" {
		h.Set("X-Slack-Request-Timestamp", ts)
	}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &webhook.Request{Method: http.MethodPost, Header: h, Body: []byte(body)}
}

func TestVerify(t *testing.T) {
	const form = "application/x-www-form-urlencoded"
	tests := []struct {
		name    string
		secrets []string
		set     map[string]string
		sig, ts string
		body    string
		now     time.Time
		want    error
	}{
		{"docs vector", []string{docSecret}, nil, docSig, docTS, docBody, docAt, nil},
		{"rotation: second secret matches", []string{"old", docSecret}, nil, docSig, docTS, docBody, docAt, nil},
		{"tampered body", []string{docSecret}, nil, docSig, docTS, docBody + "&x=1", docAt, webhook.ErrInvalidSignature},
		{"wrong secret", []string{"nope"}, nil, docSig, docTS, docBody, docAt, webhook.ErrInvalidSignature},
		{"timestamp moved", []string{docSecret}, nil, docSig, "1531420619", docBody, docAt, webhook.ErrInvalidSignature},
		{"stale", []string{docSecret}, nil, docSig, docTS, docBody, docAt.Add(301 * time.Second), webhook.ErrStale},
		{"future", []string{docSecret}, nil, docSig, docTS, docBody, docAt.Add(-301 * time.Second), webhook.ErrStale},
		{"edge", []string{docSecret}, nil, docSig, docTS, docBody, docAt.Add(300 * time.Second), nil},
		{"tolerance setting", []string{docSecret}, map[string]string{"tolerance": "10m"}, docSig, docTS, docBody, docAt.Add(9 * time.Minute), nil},
		{"missing signature", []string{docSecret}, nil, "", docTS, docBody, docAt, webhook.ErrMissingSignature},
		{"missing timestamp", []string{docSecret}, nil, docSig, "", docBody, docAt, webhook.ErrMissingSignature},
		{"timestamp not a number", []string{docSecret}, nil, docSig, "now", docBody, docAt, webhook.ErrMissingSignature},
		{"other version", []string{docSecret}, nil, "v1=" + docSig[3:], docTS, docBody, docAt, webhook.ErrInvalidSignature},
		{"not hex", []string{docSecret}, nil, "v0=xyz", docTS, docBody, docAt, webhook.ErrInvalidSignature},
		{"bad tolerance", []string{docSecret}, map[string]string{"tolerance": "0"}, docSig, docTS, docBody, docAt, webhook.ErrMisconfigured},
		{"no secrets", nil, nil, docSig, docTS, docBody, docAt, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Provider{}.Verify(request(tt.sig, tt.ts, form, tt.body), webhook.Config{Secrets: tt.secrets, Settings: tt.set}, tt.now)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q, %q) = %v, want %v", tt.sig, tt.ts, err, tt.want)
			}
			if err != nil && (strings.Contains(err.Error(), docSecret) || strings.Contains(err.Error(), docSig[3:])) {
				t.Errorf("Verify error %q leaks a secret or signature", err)
			}
		})
	}
}

func TestHandshake(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		contentType string
		body        string
		ok          bool
		reply       string
	}{
		{"url_verification", http.MethodPost, "application/json", `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`, true, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"},
		{"ssl_check", http.MethodPost, "application/x-www-form-urlencoded", "ssl_check=1&token=x", true, ""},
		{"event callback", http.MethodPost, "application/json", `{"type":"event_callback","event_id":"Ev1"}`, false, ""},
		{"slash command", http.MethodPost, "application/x-www-form-urlencoded", docBody, false, ""},
		{"GET", http.MethodGet, "", "", false, ""},
		{"not JSON", http.MethodPost, "application/json", "{", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request("", "", tt.contentType, tt.body)
			r.Method = tt.method
			reply, ok, err := Provider{}.Handshake(r, webhook.Config{})
			if err != nil || ok != tt.ok {
				t.Fatalf("Handshake() = %v, %v; want ok %v", ok, err, tt.ok)
			}
			if ok && (reply.Status != http.StatusOK || reply.ContentType != "text/plain" || reply.Body != tt.reply) {
				t.Errorf("Handshake() reply = %+v, want 200 text/plain %q", reply, tt.reply)
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
			evs, err := Provider{}.Events(r, webhook.Config{})
			if err != nil || len(evs) != 1 {
				t.Fatalf("Events() = %d events, %v; want 1", len(evs), err)
			}
			ev := evs[0]
			if ev.ID != tt.wantID || ev.Type != tt.wantType || ev.Conversation != tt.wantConv {
				t.Errorf("Events() = id %q type %q conv %q; want %q %q %q", ev.ID, ev.Type, ev.Conversation, tt.wantID, tt.wantType, tt.wantConv)
			}
			if string(ev.Body) != tt.body {
				t.Error("Events() changed the body")
			}
			if tt.retry != "" && ev.Headers["x-slack-retry-num"] != tt.retry {
				t.Errorf("Events() headers = %v, want the retry number", ev.Headers)
			}
		})
	}
}

func TestEventsMalformed(t *testing.T) {
	tests := []struct{ contentType, body string }{
		{"application/json", "{"},
		{"application/json", "[1]"},
		{"application/x-www-form-urlencoded", "payload=%7B"},
		{"application/x-www-form-urlencoded", "a=%zz"},
	}
	for _, tt := range tests {
		if _, err := (Provider{}).Events(request("", "", tt.contentType, tt.body), webhook.Config{}); !errors.Is(err, webhook.ErrMalformed) {
			t.Errorf("Events(%q) = %v, want ErrMalformed", tt.body, err)
		}
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
