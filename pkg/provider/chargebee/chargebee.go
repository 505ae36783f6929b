// Package chargebee verifies and parses Chargebee webhooks: the basic auth
// credentials configured on the webhook, compared in constant time, and the
// event id Chargebee keeps across retries. docs/providers/chargebee.md
// describes the scheme, ids and conversations.
package chargebee

import (
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/provider/internal/token"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Provider implements webhook.Provider, webhook.Signer and webhook.Checker
// for Chargebee.
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
	return token.VerifyBasic(req, cfg, "chargebee")
}

// Sign sets basic auth credentials cfg.Secrets[0].
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	return token.SignBasic(req, cfg, "chargebee")
}

// Check reports a tenant entry without secrets, or with one that is not
// "user:password".
func (Provider) Check(cfg webhook.Config) error { return token.CheckBasic(cfg, "chargebee") }

// defining are the event fields that make the event; webhook_status and
// webhooks describe its delivery and change from one attempt to the next.
var defining = []string{"id", "occurred_at", "event_type", "api_version", "content"}

// Events returns the event: id the event's "id" (ev_…), type event_type,
// conversation the subscription, else the customer, else the invoice it is
// about. It returns an error wrapping webhook.ErrMalformed when the body is
// not a JSON object or has no id.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	doc, err := jsonpath.Object(req.Body)
	if err != nil {
		return nil, err
	}
	id, err := jsonpath.Required(doc, "event", "id")
	if err != nil {
		return nil, err
	}
	fields := make([][]byte, len(defining))
	for i, f := range defining {
		fields[i] = []byte(jsonpath.Text(doc, f))
	}
	conv := ""
	for _, k := range []string{"subscription", "customer", "invoice"} {
		if v := jsonpath.First(doc, "content."+k+".id"); v != "" {
			conv = k + ":" + v
			break
		}
	}
	return []webhook.Event{{
		ID: id, Type: jsonpath.First(doc, "event_type"), Conversation: conv,
		Body: req.Body, Defining: fields,
	}}, nil
}
