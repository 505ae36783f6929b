// Package github verifies and parses GitHub webhook deliveries.
//
// Signature: X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256(secret, body).
// GitHub signs no timestamp, so replay protection rests on the idempotency
// key.
// Id: X-GitHub-Delivery, a GUID that manual redeliveries keep. Type:
// X-GitHub-Event.
// Conversation: the repository's full name plus the issue or pull request
// number when the payload has one ("octo/repo#42"), else the repository;
// without a repository, the organization's login; otherwise the hook's
// installation target ("integration:123"). Issues and pull requests share one
// number space, so "#42" orders both kinds of events about it.
//
// Settings: none.
package github

import (
	"crypto/sha256"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Provider implements webhook.Provider for GitHub.
type Provider struct{}

var _ webhook.Provider = Provider{}

const prefix = "sha256="

// Verify checks X-Hub-Signature-256 against every secret. It returns an
// error wrapping webhook.ErrMissingSignature when the header is absent,
// webhook.ErrInvalidSignature when it is malformed or no secret matches, and
// webhook.ErrMisconfigured when the tenant has no secrets.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	sig := req.Header.Get("X-Hub-Signature-256")
	if sig == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "X-Hub-Signature-256 header is required")
	}
	if !strings.HasPrefix(sig, prefix) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "X-Hub-Signature-256 must start with %q", prefix)
	}
	var buf [sha256.Size]byte
	got, ok := webhook.AppendHex(buf[:0], sig[len(prefix):])
	if !ok {
		return webhook.Errorf(webhook.ErrInvalidSignature, "X-Hub-Signature-256 is not hex")
	}
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "github: no secrets configured")
	}
	if !webhook.MatchMAC(sha256New, cfg.Secrets, [][]byte{got}, req.Body) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured secret matches X-Hub-Signature-256")
	}
	return nil
}

var sha256New, _ = webhook.Hash("sha256")

// payloadPaths are the members the conversation key needs, read in one pass.
var payloadPaths = webhook.NewPaths("", "repository", "repository.full_name", "issue", "issue.number",
	"pull_request", "pull_request.number", "organization", "organization.login")

const (
	pRoot = iota
	pRepo
	pFullName
	pIssue
	pIssueNumber
	pPull
	pPullNumber
	pOrg
	pLogin
	nPaths
)

// payload holds the members the conversation key needs, typed as decoding
// into a struct typed them: repo, issue, pull and org report whether that
// member is an object (a pointer field stays nil when it is absent or null).
type payload struct {
	repo, issue, pull, org bool
	fullName, login        string
	issueNumber, pullNum   int
}

// decode reads doc in one pass. It returns an error wrapping
// webhook.ErrMalformed when doc is not JSON or a member has a type a struct
// field would refuse.
func decode(doc []byte) (payload, error) {
	var buf [nPaths]webhook.Value
	v, err := payloadPaths.Scan(doc, buf[:0])
	if err != nil {
		return payload{}, webhook.Errorf(webhook.ErrMalformed, "body is not a JSON object: %v", err)
	}
	var p payload
	for _, o := range [...]struct {
		i   int
		set *bool
	}{{pRoot, nil}, {pRepo, &p.repo}, {pIssue, &p.issue}, {pPull, &p.pull}, {pOrg, &p.org}} {
		switch v[o.i].Kind {
		case webhook.KindObject:
			if o.set != nil {
				*o.set = true
			}
		case webhook.KindNull, webhook.KindMissing:
		default:
			return p, webhook.Errorf(webhook.ErrMalformed, "body is not a JSON object of GitHub's shape: a %s where an object belongs", v[o.i].Kind)
		}
	}
	var ok1, ok2 bool
	p.fullName, ok1 = v[pFullName].AsString()
	p.login, ok2 = v[pLogin].AsString()
	if !ok1 || !ok2 {
		return p, webhook.Errorf(webhook.ErrMalformed, "body is not a JSON object of GitHub's shape: a name is not a string")
	}
	if p.issueNumber, err = number(v[pIssueNumber]); err != nil {
		return p, err
	}
	if p.pullNum, err = number(v[pPullNumber]); err != nil {
		return p, err
	}
	return p, nil
}

// number reads an issue or pull request number as an int field decodes it.
func number(v webhook.Value) (int, error) {
	switch v.Kind {
	case webhook.KindMissing, webhook.KindNull:
		return 0, nil
	case webhook.KindNumber:
		if n, err := strconv.ParseInt(string(v.Raw), 10, strconv.IntSize); err == nil {
			return int(n), nil
		}
	}
	return 0, webhook.Errorf(webhook.ErrMalformed, "body is not a JSON object of GitHub's shape: a number is not an integer")
}

// isForm reports whether a Content-Type is a form body, ignoring case and
// parameters ("application/x-www-form-urlencoded; charset=utf-8").
func isForm(contentType string) bool {
	mt, err := webhook.MediaType(contentType)
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
		form, err := webhook.ParseForm(req.Body)
		if err != nil || form.Get("payload") == "" {
			return nil, webhook.Errorf(webhook.ErrMalformed, "form body has no payload field")
		}
		doc = []byte(form.Get("payload"))
	}
	p, err := decode(doc)
	if err != nil {
		return nil, err
	}
	conv := ""
	if p.repo {
		conv = p.fullName
		switch {
		case p.issue && p.issueNumber > 0:
			conv += "#" + strconv.Itoa(p.issueNumber)
		case p.pull && p.pullNum > 0:
			conv += "#" + strconv.Itoa(p.pullNum)
		}
	}
	if conv == "" && p.org && p.login != "" {
		conv = p.login
	}
	if target := req.Header.Get("X-GitHub-Hook-Installation-Target-Type"); conv == "" && target != "" {
		conv = target + ":" + req.Header.Get("X-GitHub-Hook-Installation-Target-ID")
	}
	return []webhook.Event{{
		ID:           id,
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
