// Package postmark verifies and parses Postmark webhooks (bounce, delivery,
// open, click, spam complaint, subscription change and inbound): the basic
// auth credentials set in the webhook URL, compared in constant time.
// docs/providers/postmark.md describes the scheme, ids and conversations.
package postmark

import (
	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/provider/internal/token"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Provider implements webhook.Provider, webhook.Signer and webhook.Checker
// for Postmark. Verify, Sign and Check are token.BasicAuth's: Verify checks the
// basic auth credentials against every secret ("user:password") in
// constant time, Sign sets credentials cfg.Secrets[0], as Postmark sends
// those of the webhook URL, and Check reports a tenant entry without
// secrets, or with one that is not "user:password".
type Provider struct{ token.BasicAuth[sender] }

// sender names Postmark for token.BasicAuth.
type sender struct{}

func (sender) Name() string { return "postmark" }

var (
	_ webhook.Provider = Provider{}
	_ webhook.Signer   = Provider{}
	_ webhook.Checker  = Provider{}
)

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
