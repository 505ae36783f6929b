// Package github verifies and parses GitHub webhook deliveries
// (X-Hub-Signature-256 over the raw body). docs/providers/github.md
// describes the scheme, the ids and conversations derived, and the replay
// rules.
package github

import (
	"encoding/json"
	"mime"
	"net/url"
	"strconv"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Provider implements webhook.Provider for GitHub; Verify and Sign are
// webhook.HubSignature's.
type Provider struct{ webhook.HubSignature }

// payload holds the members the conversation key needs.
type payload struct {
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

// isForm reports whether a Content-Type is a form body, ignoring case and
// parameters ("application/x-www-form-urlencoded; charset=utf-8").
func isForm(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/x-www-form-urlencoded"
}

// Events returns the single event of a delivery. GitHub sends JSON, or a
// form body with a "payload" field when the hook's content type is
// application/x-www-form-urlencoded.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
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
	var p payload
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
		TraceID:      id,
		Type:         typ,
		Conversation: conv,
		Body:         req.Body,
		Headers: map[string]string{
			"x-github-event":    typ,
			"x-github-delivery": id,
			"content-type":      req.Header.Get("Content-Type"),
		},
	}}, nil
}

// Check implements webhook.Checker: the tenant has secrets and no setting
// (the scheme takes none). Errors wrap webhook.ErrMisconfigured.
func (Provider) Check(cfg webhook.Config) error { return cfg.CheckSettings("github", nil, nil) }
