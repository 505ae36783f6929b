package github

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

// GitHub's own test values, from "Validating webhook deliveries" → "Testing
// the webhook payload validation":
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
const (
	docSecret    = "It's a Secret to Everybody"
	docPayload   = "Hello, World!"
	docSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func request(sig, body string) *webhook.Request {
	h := http.Header{}
	if sig != "" {
		h.Set("X-Hub-Signature-256", sig)
	}
	return &webhook.Request{Method: http.MethodPost, Header: h, Body: []byte(body)}
}

func TestVerify(t *testing.T) {
	now := time.Unix(1700000000, 0)
	tests := []struct {
		name    string
		secrets []string
		sig     string
		body    string
		want    error
	}{
		{"docs vector", []string{docSecret}, docSignature, docPayload, nil},
		{"upper-case hex", []string{docSecret}, "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17", docPayload, nil},
		{"rotation: second secret matches", []string{"old-secret", docSecret}, docSignature, docPayload, nil},
		{"tampered body", []string{docSecret}, docSignature, "Hello, World?", webhook.ErrInvalidSignature},
		{"wrong secret", []string{"It's a Secret to Nobody"}, docSignature, docPayload, webhook.ErrInvalidSignature},
		{"missing header", []string{docSecret}, "", docPayload, webhook.ErrMissingSignature},
		{"sha1 prefix", []string{docSecret}, "sha1=757107ea0eb2509fc211221cce984b8a37570b6d", docPayload, webhook.ErrInvalidSignature},
		{"not hex", []string{docSecret}, "sha256=zz", docPayload, webhook.ErrInvalidSignature},
		{"truncated signature", []string{docSecret}, docSignature[:40], docPayload, webhook.ErrInvalidSignature},
		{"empty signature", []string{docSecret}, "sha256=", docPayload, webhook.ErrInvalidSignature},
		{"no secrets", nil, docSignature, docPayload, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Provider{}.Verify(request(tt.sig, tt.body), webhook.Config{Secrets: tt.secrets}, now)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q) = %v, want %v", tt.sig, err, tt.want)
			}
		})
	}
}

func TestVerifyErrorIsSafe(t *testing.T) {
	err := Provider{}.Verify(request(sign("x", docPayload), docPayload), webhook.Config{Secrets: []string{docSecret}}, time.Now())
	if err == nil {
		t.Fatal("Verify with wrong signature = nil")
	}
	want := sign(docSecret, docPayload)
	for _, leak := range []string{docSecret, want[len("sha256="):], docPayload} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("Verify error %q leaks %q", err, leak)
		}
	}
}

func TestEvents(t *testing.T) {
	tests := []struct {
		name        string
		event       string
		contentType string
		body        string
		extra       map[string]string
		wantType    string
		wantConv    string
	}{
		{"issue", "issues", "application/json", `{"action":"opened","issue":{"number":42},"repository":{"full_name":"octo/repo"}}`, nil, "issues", "octo/repo#42"},
		{"pull request", "pull_request", "application/json", `{"action":"opened","number":7,"pull_request":{"number":7},"repository":{"full_name":"octo/repo"}}`, nil, "pull_request", "octo/repo#7"},
		{"comment on PR uses issue number", "issue_comment", "application/json", `{"issue":{"number":7,"pull_request":{}},"repository":{"full_name":"octo/repo"}}`, nil, "issue_comment", "octo/repo#7"},
		{"push", "push", "application/json", `{"ref":"refs/heads/main","repository":{"full_name":"octo/repo"}}`, nil, "push", "octo/repo"},
		{"organization event", "membership", "application/json", `{"organization":{"login":"octo"}}`, nil, "membership", "octo"},
		{"installation target", "ping", "application/json", `{"zen":"Keep it logically awesome."}`, map[string]string{"X-GitHub-Hook-Installation-Target-Type": "integration", "X-GitHub-Hook-Installation-Target-ID": "123"}, "ping", "integration:123"},
		{"form body", "issues", "application/x-www-form-urlencoded; charset=utf-8", "payload=" + url.QueryEscape(`{"issue":{"number":3},"repository":{"full_name":"octo/repo"}}`), nil, "issues", "octo/repo#3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("", tt.body)
			req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
			req.Header.Set("X-GitHub-Event", tt.event)
			req.Header.Set("Content-Type", tt.contentType)
			for k, v := range tt.extra {
				req.Header.Set(k, v)
			}
			evs, err := Provider{}.Events(req, webhook.Config{})
			if err != nil {
				t.Fatalf("Events() error = %v", err)
			}
			if len(evs) != 1 {
				t.Fatalf("Events() returned %d events, want 1", len(evs))
			}
			ev := evs[0]
			if ev.ID != "72d3162e-cc78-11e3-81ab-4c9367dc0958" || ev.Type != tt.wantType || ev.Conversation != tt.wantConv {
				t.Errorf("Events() = id %q type %q conv %q; want delivery id, %q, %q", ev.ID, ev.Type, ev.Conversation, tt.wantType, tt.wantConv)
			}
			if string(ev.Body) != tt.body {
				t.Errorf("Events() body was changed: %q", ev.Body)
			}
		})
	}
}

func TestEventsMalformed(t *testing.T) {
	tests := []struct {
		name, delivery, event, contentType, body string
	}{
		{"no delivery id", "", "push", "application/json", `{}`},
		{"no event header", "d1", "", "application/json", `{}`},
		{"not JSON", "d1", "push", "application/json", `{`},
		{"form without payload", "d1", "push", "application/x-www-form-urlencoded", `a=b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("", tt.body)
			if tt.delivery != "" {
				req.Header.Set("X-GitHub-Delivery", tt.delivery)
			}
			if tt.event != "" {
				req.Header.Set("X-GitHub-Event", tt.event)
			}
			req.Header.Set("Content-Type", tt.contentType)
			if _, err := (Provider{}).Events(req, webhook.Config{}); !errors.Is(err, webhook.ErrMalformed) {
				t.Errorf("Events() = %v, want ErrMalformed", err)
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(docSignature, []byte(docPayload))
	f.Add("sha256=", []byte(""))
	f.Add("sha256=zz", []byte("{}"))
	f.Add("", []byte("x"))
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		req := &webhook.Request{Header: http.Header{"X-Hub-Signature-256": {sig}}, Body: body}
		err := Provider{}.Verify(req, webhook.Config{Secrets: []string{"fuzz-secret"}}, time.Now())
		if err == nil && sig != sign("fuzz-secret", string(body)) && !strings.EqualFold(sig, sign("fuzz-secret", string(body))) {
			t.Fatalf("Verify(%q) = nil for a signature that is not the MAC", sig)
		}
	})
}

func FuzzEvents(f *testing.F) {
	// Seeds of the former differential test against the encoding/json
	// implementation, which is now the implementation.
	for _, seed := range []string{
		`{"issue":{"number":42},"repository":{"full_name":"octo/repo"}}`,
		`{"pull_request":{"number":7},"issue":null,"repository":{"full_name":"octo/repo"}}`,
		`{"issue":{"number":0},"pull_request":{"number":3},"repository":{}}`,
		`{"issue":{"number":1.5},"repository":{"full_name":"r"}}`, `{"issue":{"number":"1"}}`,
		`{"issue":{"number":99999999999999999999}}`, `{"issue":{"number":-1},"repository":{"full_name":"r"}}`,
		`{"issue":{"number":1e2}}`, `{"repository":null,"organization":{"login":"o"}}`, `{"organization":{"login":5}}`,
		`{"repository":[]}`, `{"repository":{"full_name":null}}`, `null`, `[]`, `"x"`, `{}`, `{} x`, ``,
		`{"repository":{"full_name":"caf\u00e9\ud800"}}`,
	} {
		f.Add("application/json", []byte(seed))
	}
	f.Add("application/x-www-form-urlencoded", []byte(`payload=%7B%22organization%22%3A%7B%22login%22%3A%22o%22%7D%7D`))
	f.Add("application/x-www-form-urlencoded", []byte(`payload=%7B`))
	f.Add("application/json", []byte(`{"issue":{"number":42},"repository":{"full_name":"octo/repo"}}`))
	f.Add("application/x-www-form-urlencoded", []byte(`payload=%7B%7D`))
	f.Add("application/json", []byte(`[]`))
	f.Add("text/plain", []byte(`{"organization":{"login":"o"}}`))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		req := &webhook.Request{Header: http.Header{}, Body: body}
		req.Header.Set("X-GitHub-Delivery", "d")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("Content-Type", contentType)
		evs, err := Provider{}.Events(req, webhook.Config{})
		if err != nil && !errors.Is(err, webhook.ErrMalformed) {
			t.Fatalf("Events() error %v does not wrap ErrMalformed", err)
		}
		for _, ev := range evs {
			if ev.ID == "" && ev.Body == nil {
				t.Fatal("Events() returned an event with neither id nor body")
			}
		}
	})
}
