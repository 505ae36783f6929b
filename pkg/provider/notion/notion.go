// Package notion verifies and parses Notion integration webhooks:
// X-Notion-Signature, "sha256=" + hex HMAC-SHA256 of the body under the
// subscription's verification_token, and the unsigned verification request
// that delivers that token. docs/providers/notion.md describes the scheme,
// the onboarding of the token, ids, conversations and settings.
package notion

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/provider/internal/token"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// SignatureHeader carries the event's signature.
const SignatureHeader = "X-Notion-Signature"

// signature is the events' signature: "sha256=" + hex HMAC-SHA256 of the body.
var signature = webhook.BodyHMAC{Header: SignatureHeader, Prefix: "sha256="}

// Provider implements webhook.Provider, webhook.Signer, webhook.Handshaker
// and webhook.Checker for Notion.
type Provider struct{}

var (
	_ webhook.Provider   = Provider{}
	_ webhook.Signer     = Provider{}
	_ webhook.Handshaker = Provider{}
	_ webhook.Checker    = Provider{}
)

// Check reports a tenant entry without secrets, unless it is onboarding.
func (Provider) Check(cfg webhook.Config) error { return token.CheckOnboarding(cfg, "notion") }

// verification returns the verification_token of Notion's verification
// request: an unsigned POST whose body is {"verification_token": …}.
func verification(req *webhook.Request) (string, bool) {
	if req.Method != http.MethodPost || req.Header.Get(SignatureHeader) != "" {
		return "", false
	}
	var v map[string]json.RawMessage
	if json.Unmarshal(req.Body, &v) != nil || len(v) != 1 {
		return "", false
	}
	var tok string
	if json.Unmarshal(v["verification_token"], &tok) != nil || tok == "" {
		return "", false
	}
	return tok, true
}

// Verify checks X-Notion-Signature against every verification token. The
// verification request, which carries the token and no signature, passes
// on to Handshake. It returns an error wrapping
// webhook.ErrMissingSignature, webhook.ErrInvalidSignature or
// webhook.ErrMisconfigured. Notion signs no timestamp, so now is unused.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	if _, ok := verification(req); ok {
		return nil
	}
	return signature.Verify(req, cfg, now)
}

// Sign sets X-Notion-Signature with cfg.Secrets[0].
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	return signature.Sign(req, cfg, now)
}

// Handshake answers the verification request: 200 when its token is
// configured already; nothing (ok false: Events queues it for the tenant)
// while the tenant is onboarding; webhook.ErrForbidden otherwise (see
// token.Answer). ok is false for every other request.
func (Provider) Handshake(req *webhook.Request, cfg webhook.Config) (webhook.Reply, bool, error) {
	tok, isVerification := verification(req)
	if !isVerification {
		return webhook.Reply{}, false, nil
	}
	return token.Answer(cfg, "notion", tok, webhook.Reply{Status: http.StatusOK, ContentType: "text/plain"})
}

// Events returns the event: id its "id", type "type" (page.created, …),
// conversation its entity ("page:<id>"). Its payload digest leaves out
// attempt_number, the field Notion's retries change. The verification
// request of an onboarding tenant becomes the event "verification", keyed
// by a hash of the token, so the tenant's target receives the token. It
// returns an error wrapping webhook.ErrMalformed when the body is not a
// JSON object with an id.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	if tok, ok := verification(req); ok {
		return []webhook.Event{{ID: token.HandshakeID("verification", tok), Type: "verification", Body: req.Body}}, nil
	}
	doc, err := jsonpath.Object(req.Body)
	if err != nil {
		return nil, err
	}
	id, err := jsonpath.Required(doc, "event", "id")
	if err != nil {
		return nil, err
	}
	m := doc.(map[string]any)
	delete(m, "attempt_number")
	canonical, err := json.Marshal(m)
	if err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "event: %v", err)
	}
	conv := ""
	if e := jsonpath.First(doc, "entity.id"); e != "" {
		conv = jsonpath.First(doc, "entity.type") + ":" + e
	}
	return []webhook.Event{{ID: id, Type: jsonpath.First(doc, "type"), Conversation: conv, Body: req.Body, Defining: [][]byte{canonical}}}, nil
}
