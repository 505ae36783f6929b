// Package asana verifies and parses Asana webhooks: the handshake, whose
// X-Hook-Secret is echoed as Asana requires (and forwarded to the tenant
// while it is onboarding, since that secret then signs every event),
// X-Hook-Signature, hex HMAC-SHA256 of the body under that secret, and the
// heartbeats. docs/providers/asana.md describes the scheme, the onboarding
// of the secret, ids, conversations and settings.
package asana

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/provider/internal/token"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Headers of Asana's requests.
const (
	SecretHeader    = "X-Hook-Secret"
	SignatureHeader = "X-Hook-Signature"
)

// signature is the hex HMAC-SHA256 of the body in SignatureHeader.
var signature = webhook.BodyHMAC{Header: SignatureHeader}

// Provider implements webhook.Provider, webhook.Signer, webhook.Handshaker,
// webhook.Responder and webhook.Checker for Asana.
type Provider struct{}

var (
	_ webhook.Provider   = Provider{}
	_ webhook.Signer     = Provider{}
	_ webhook.Handshaker = Provider{}
	_ webhook.Responder  = Provider{}
	_ webhook.Checker    = Provider{}
)

// Check reports a tenant entry without secrets, unless it is onboarding.
func (Provider) Check(cfg webhook.Config) error { return token.CheckOnboarding(cfg, "asana") }

// handshake returns the X-Hook-Secret of Asana's handshake: a POST that
// carries the secret and no signature.
func handshake(req *webhook.Request) (string, bool) {
	s := req.Header.Get(SecretHeader)
	return s, req.Method == http.MethodPost && s != "" && req.Header.Get(SignatureHeader) == ""
}

// Verify checks X-Hook-Signature against every secret. The handshake,
// which carries X-Hook-Secret and no signature, passes on to Handshake. It
// returns an error wrapping webhook.ErrMissingSignature,
// webhook.ErrInvalidSignature or webhook.ErrMisconfigured. Asana signs no
// timestamp, so now is unused.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	if _, ok := handshake(req); ok {
		return nil
	}
	return signature.Verify(req, cfg, now)
}

// Sign sets X-Hook-Signature with cfg.Secrets[0].
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	return signature.Sign(req, cfg, now)
}

// echo is Asana's required answer to a handshake: 200 with the secret
// echoed in X-Hook-Secret.
func echo(secret string) webhook.Reply {
	return webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Headers: map[string]string{"x-hook-secret": secret}}
}

// Handshake answers, after Verify, the handshake whose secret is configured
// already (echoed, nothing queued) and heartbeats (a signed body with no
// events: 200). A handshake with another secret is forwarded while the
// tenant is onboarding (ok false: Events queues it and Respond echoes the
// secret once it is queued) and answered webhook.ErrForbidden otherwise.
func (Provider) Handshake(req *webhook.Request, cfg webhook.Config) (webhook.Reply, bool, error) {
	if req.Method != http.MethodPost {
		return webhook.Reply{}, false, nil
	}
	if secret, ok := handshake(req); ok {
		return token.Answer(cfg, "asana", secret, echo(secret))
	}
	var b struct {
		Events []json.RawMessage `json:"events"`
	}
	if json.Unmarshal(req.Body, &b) == nil && b.Events != nil && len(b.Events) == 0 {
		return webhook.Reply{Status: http.StatusOK, ContentType: "text/plain"}, true, nil
	}
	return webhook.Reply{}, false, nil
}

// Respond echoes the secret of a forwarded handshake once it is queued.
func (Provider) Respond(req *webhook.Request, _ webhook.Config, _ []webhook.Event) (webhook.Reply, bool) {
	if secret, ok := handshake(req); ok {
		return echo(secret), true
	}
	return webhook.Reply{}, false
}

// Events returns one event per item of "events". Asana's events carry no
// id; the key is each event's hash, which a retry repeats. The type is
// "<resource_type>.<action>" (task.changed), the conversation the resource
// ("task:<gid>"). A forwarded handshake becomes the event "handshake",
// keyed by a hash of the secret, whose body {"x-hook-secret": …} brings the
// secret to the tenant's target. It returns an error wrapping
// webhook.ErrMalformed when the body is not {"events": [objects]}.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	if secret, ok := handshake(req); ok {
		body, _ := json.Marshal(map[string]string{"x-hook-secret": secret}) // a string map always encodes
		return []webhook.Event{{ID: token.HandshakeID("handshake", secret), Type: "handshake", Body: body,
			Headers: map[string]string{"content-type": "application/json"}}}, nil
	}
	var b struct {
		Events []json.RawMessage `json:"events"`
	}
	if _, err := jsonpath.Object(req.Body); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(req.Body, &b); err != nil || len(b.Events) == 0 {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not {\"events\": [...]} with events")
	}
	evs := make([]webhook.Event, 0, len(b.Events))
	for i, raw := range b.Events {
		doc, err := jsonpath.Object(raw)
		if err != nil {
			return nil, webhook.Errorf(webhook.ErrMalformed, "event %d is not a JSON object", i)
		}
		kind := jsonpath.First(doc, "resource.resource_type")
		conv := ""
		if gid := jsonpath.First(doc, "resource.gid"); gid != "" {
			conv = kind + ":" + gid
		}
		evs = append(evs, webhook.Event{Type: kind + "." + jsonpath.First(doc, "action"), Conversation: conv, Body: raw,
			Headers: map[string]string{"content-type": "application/json"}})
	}
	return evs, nil
}
