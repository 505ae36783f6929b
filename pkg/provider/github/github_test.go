package github

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
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

func request(sig, body string) *webhook.Request {
	return providertest.Request(map[string]string{"X-Hub-Signature-256": sig}, body)
}

// delivery is an issues event as GitHub sends it, unsigned.
func delivery() *webhook.Request {
	req := request("", `{"action":"opened","issue":{"number":42},"repository":{"full_name":"octo/repo"}}`)
	req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("Content-Type", "application/json")
	return req
}

func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Case{
		Provider:  Provider{},
		Request:   delivery,
		Signature: "X-Hub-Signature-256",
		// Another event is other signed content: the key is the body's hash.
		OtherEvent: providertest.Replace("42", "43"),
		// GitHub retries nothing; a redelivery (UI or REST API) sends the
		// same payload with the same X-GitHub-Delivery, which identifies the
		// event, not the attempt (docs/providers/github.md; the REST API's
		// hook delivery "guid": "shared with all deliveries").
		Retry:    providertest.Resent,
		Unsigned: []string{"X-GitHub-Delivery", "X-GitHub-Event", "X-GitHub-Hook-ID"},
		Vectors: []providertest.Vector{
			{Name: "GitHub docs", Request: func() *webhook.Request { return request(docSignature, docPayload) },
				Config: webhook.Config{Secrets: []string{docSecret}}, Headers: []string{"X-Hub-Signature-256"}},
			// Signed with the secret from GitHub's validation docs.
			providertest.SampleVector(t, "github", "issues-opened", "X-Hub-Signature-256"),
		},
		Tampers: []providertest.Change{
			{Name: "sha1 prefix", Apply: func(r *webhook.Request) {
				r.Header.Set("X-Hub-Signature-256", strings.Replace(r.Header.Get("X-Hub-Signature-256"), "sha256=", "sha1=", 1))
			}},
		},
		Malformed: []providertest.Change{
			{Name: "no delivery id", Apply: providertest.Header("X-GitHub-Delivery", "")},
			{Name: "no event header", Apply: providertest.Header("X-GitHub-Event", "")},
			{Name: "not JSON", Apply: providertest.Body(`{`)},
			{Name: "trailing data", Apply: func(r *webhook.Request) { r.Body = append(r.Body, ` {}`...) }},
			{Name: "form without payload", Apply: func(r *webhook.Request) {
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				r.Body = []byte(`a=b`)
			}},
		},
	})
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
			// The delivery GUID is unsigned: it is the traced event id, the
			// key is made of the signed body (no signed id).
			ev := providertest.WantEvent(t, Provider{}, req, webhook.Config{}, webhook.Event{Type: tt.wantType, Conversation: tt.wantConv})
			if webhook.EventID(ev) != "72d3162e-cc78-11e3-81ab-4c9367dc0958" {
				t.Errorf("Events() traced id %q, want the delivery id", webhook.EventID(ev))
			}
			if string(ev.Body) != tt.body {
				t.Errorf("Events() body was changed: %q", ev.Body)
			}
		})
	}
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
