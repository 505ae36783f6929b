// Package gitlab verifies and parses GitLab webhooks (project, group and
// system hooks): the secret token GitLab sends as X-Gitlab-Token, compared
// in constant time, and the Idempotency-Key GitLab keeps across the
// retries of one event. docs/providers/gitlab.md describes the scheme, the
// ids and conversations derived, and the settings.
package gitlab

import (
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/provider/internal/token"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Header carries the webhook's secret token.
const Header = "X-Gitlab-Token"

// Provider implements webhook.Provider, webhook.Signer and webhook.Checker
// for GitLab.
type Provider struct{}

var (
	_ webhook.Provider = Provider{}
	_ webhook.Signer   = Provider{}
	_ webhook.Checker  = Provider{}
)

// Verify checks X-Gitlab-Token against every secret in constant time. It
// returns an error wrapping webhook.ErrMissingSignature when the header is
// absent, webhook.ErrInvalidSignature when no secret matches, and
// webhook.ErrMisconfigured when the tenant has no secrets. GitLab signs
// nothing, so now is unused.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	return token.Verify(req, cfg, "gitlab", Header)
}

// Sign sets X-Gitlab-Token to cfg.Secrets[0], as GitLab sends it.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	return token.Sign(req, cfg, "gitlab", Header)
}

// Check reports a tenant entry without secrets, or with a setting (GitLab
// takes none).
func (Provider) Check(cfg webhook.Config) error { return cfg.CheckSettings("gitlab", nil, nil) }

// Events returns the delivery's single event. The id is the Idempotency-Key
// header, which GitLab keeps across the automatic and manual retries of one
// event (a token scheme covers every header alike); without it (GitLab
// before 17.4) the key is the body's hash, which a retry repeats. It returns
// an error wrapping webhook.ErrMalformed when the body is not a JSON object.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	doc, err := jsonpath.Object(req.Body)
	if err != nil {
		return nil, err
	}
	headers := map[string]string{}
	for _, h := range []string{"X-Gitlab-Event", "X-Gitlab-Instance", "X-Gitlab-Webhook-UUID", "X-Gitlab-Event-UUID", "Idempotency-Key"} {
		if v := req.Header.Get(h); v != "" {
			headers[strings.ToLower(h)] = v
		}
	}
	typ := jsonpath.First(doc, "object_kind", "event_name")
	if typ == "" {
		typ = req.Header.Get("X-Gitlab-Event")
	}
	return []webhook.Event{{
		ID:           strings.TrimSpace(req.Header.Get("Idempotency-Key")),
		TraceID:      req.Header.Get("X-Gitlab-Event-UUID"),
		Type:         typ,
		Conversation: conversation(doc),
		Body:         req.Body,
		Headers:      headers,
	}}, nil
}

// conversation orders a project's events per issue, merge request or
// pipeline ("<project id>:<kind>:<iid>"), else per project.
func conversation(doc any) string {
	project := jsonpath.First(doc, "project.id", "project_id")
	if project == "" {
		return ""
	}
	kind := jsonpath.First(doc, "object_kind")
	switch kind {
	case "issue", "work_item", "merge_request":
		if iid := jsonpath.First(doc, "object_attributes.iid"); iid != "" {
			return project + ":" + kind + ":" + iid
		}
	case "note":
		for _, k := range []string{"issue", "merge_request"} {
			if iid := jsonpath.First(doc, k+".iid"); iid != "" {
				return project + ":" + k + ":" + iid
			}
		}
	case "pipeline":
		if id := jsonpath.First(doc, "object_attributes.id"); id != "" {
			return project + ":pipeline:" + id
		}
	case "build":
		if id := jsonpath.First(doc, "pipeline_id"); id != "" {
			return project + ":pipeline:" + id
		}
	}
	return project
}
