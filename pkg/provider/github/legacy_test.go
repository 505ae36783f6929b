package github

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonkeys"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// legacyEvents is Events as it was when it decoded the body with
// encoding/json; FuzzEventsMatchLegacy holds the single-pass Events to it.
func legacyEvents(req *webhook.Request) ([]webhook.Event, error) {
	id := req.Header.Get("X-GitHub-Delivery")
	if id == "" {
		return nil, webhook.Errorf(webhook.ErrMalformed, "X-GitHub-Delivery header is required")
	}
	typ := req.Header.Get("X-GitHub-Event")
	if typ == "" {
		return nil, webhook.Errorf(webhook.ErrMalformed, "X-GitHub-Event header is required")
	}
	doc := req.Body
	if isForm(req.Header.Get("Content-Type")) {
		form, err := url.ParseQuery(string(req.Body))
		if err != nil || form.Get("payload") == "" {
			return nil, webhook.Errorf(webhook.ErrMalformed, "form body has no payload field")
		}
		doc = []byte(form.Get("payload"))
	}
	var p struct {
		Repository *struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
		Issue *struct {
			Number int `json:"number"`
		} `json:"issue"`
		PullRequest *struct {
			Number int `json:"number"`
		} `json:"pull_request"`
		Organization *struct {
			Login string `json:"login"`
		} `json:"organization"`
	}
	if err := json.Unmarshal(doc, &p); err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a JSON object: %v", err)
	}
	conv := ""
	if p.Repository != nil {
		conv = p.Repository.FullName
		switch {
		case p.Issue != nil && p.Issue.Number > 0:
			conv += "#" + strconv.Itoa(p.Issue.Number)
		case p.PullRequest != nil && p.PullRequest.Number > 0:
			conv += "#" + strconv.Itoa(p.PullRequest.Number)
		}
	}
	if conv == "" && p.Organization != nil && p.Organization.Login != "" {
		conv = p.Organization.Login
	}
	if target := req.Header.Get("X-GitHub-Hook-Installation-Target-Type"); conv == "" && target != "" {
		conv = target + ":" + req.Header.Get("X-GitHub-Hook-Installation-Target-ID")
	}
	return []webhook.Event{{
		ID: id, Type: typ, Conversation: conv, Body: req.Body,
		Headers: map[string]string{"x-github-event": typ, "x-github-delivery": id, "content-type": req.Header.Get("Content-Type")},
	}}, nil
}

func FuzzEventsMatchLegacy(f *testing.F) {
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
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		req := &webhook.Request{Method: http.MethodPost, Header: http.Header{
			"Content-Type": {contentType}, "X-Github-Delivery": {"d"}, "X-Github-Event": {"push"},
			"X-Github-Hook-Installation-Target-Type": {"integration"}, "X-Github-Hook-Installation-Target-Id": {"1"},
		}, Body: body}
		doc := body
		if isForm(contentType) {
			form, _ := url.ParseQuery(string(body))
			doc = []byte(form.Get("payload"))
		}
		if json.Valid(doc) && jsonkeys.Ambiguous(doc) {
			t.Skip("keys where struct decoding and Scan legitimately differ")
		}
		got, err := Provider{}.Events(req, webhook.Config{})
		want, wantErr := legacyEvents(req)
		if (err == nil) != (wantErr == nil) || err != nil && !errors.Is(err, webhook.ErrMalformed) {
			t.Fatalf("Events(%q) error = %v, legacy %v", body, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Events(%q) = %+v, legacy %+v", body, got, want)
		}
	})
}
