// Package postmark verifies and parses Postmark webhooks (bounce, delivery,
// open, click, spam complaint, subscription change and inbound): the basic
// auth credentials set in the webhook URL, compared in constant time.
// docs/providers/postmark.md describes the scheme, ids and conversations.
package postmark

import (
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/provider/internal/token"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Provider implements webhook.Provider, webhook.Signer and webhook.Checker
// for Postmark.
type Provider struct{}

var (
	_ webhook.Provider = Provider{}
	_ webhook.Signer   = Provider{}
	_ webhook.Checker  = Provider{}
)

// Verify checks the basic auth credentials against every secret
// ("user:password") in constant time. It returns an error wrapping
// webhook.ErrMissingSignature when there is no Authorization header,
// webhook.ErrInvalidSignature when it is malformed or matches no secret,
// and webhook.ErrMisconfigured when the tenant has no secrets.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	return token.VerifyBasic(req, cfg, "postmark")
}

// Sign sets basic auth credentials cfg.Secrets[0], as Postmark sends those
// of the webhook URL.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	return token.SignBasic(req, cfg, "postmark")
}

// Check reports a tenant entry without secrets, or with one that is not
// "user:password".
func (Provider) Check(cfg webhook.Config) error { return token.CheckBasic(cfg, "postmark") }

// Events returns the delivery's single event. Postmark's payloads carry no
// event id and a retry sends the same body, so the key is the body's hash;
// the type is RecordType ("Inbound" for inbound messages, which have none)
// and the conversation the message's MessageID, which orders a message's
// delivery, bounce, open and click events. It returns an error wrapping
// webhook.ErrMalformed when the body is not a JSON object.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	doc, err := jsonpath.Object(req.Body)
	if err != nil {
		return nil, err
	}
	typ := jsonpath.First(doc, "RecordType")
	if typ == "" {
		typ = "Inbound"
	}
	conv := jsonpath.First(doc, "MessageID")
	if conv != "" {
		conv = "message:" + conv
	}
	return []webhook.Event{{Type: typ, Conversation: conv, Body: req.Body}}, nil
}
