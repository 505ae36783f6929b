// Package dropbox verifies and parses Dropbox webhooks: the GET
// verification request, whose challenge is echoed as Dropbox requires, and
// notifications signed with X-Dropbox-Signature, hex HMAC-SHA256 of the
// body under the app secret. docs/providers/dropbox.md describes the
// scheme, ids and conversations.
package dropbox

import (
	"net/http"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// SignatureHeader carries the notification's signature.
const SignatureHeader = "X-Dropbox-Signature"

// signature is the hex HMAC-SHA256 of the body in SignatureHeader.
var signature = webhook.BodyHMAC{Header: SignatureHeader}

// Provider implements webhook.Provider, webhook.Signer, webhook.Handshaker
// and webhook.Checker for Dropbox.
type Provider struct{}

var (
	_ webhook.Provider   = Provider{}
	_ webhook.Signer     = Provider{}
	_ webhook.Handshaker = Provider{}
	_ webhook.Checker    = Provider{}
)

// Check reports a tenant entry without secrets, or with a setting (Dropbox
// takes none).
func (Provider) Check(cfg webhook.Config) error { return cfg.CheckSettings("dropbox", nil, nil) }

// Verify checks X-Dropbox-Signature against every app secret. It returns
// an error wrapping webhook.ErrMissingSignature, webhook.ErrInvalidSignature
// or webhook.ErrMisconfigured. Dropbox signs no timestamp, so now is unused.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	return signature.Verify(req, cfg, now)
}

// Sign sets X-Dropbox-Signature with cfg.Secrets[0].
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	return signature.Sign(req, cfg, now)
}

// Handshake answers Dropbox's verification request, GET ?challenge=…, with
// the challenge as it came, Content-Type text/plain and
// X-Content-Type-Options: nosniff, the headers Dropbox requires so that
// the echo cannot be read as HTML. ok is false for POSTs. It returns an
// error wrapping webhook.ErrMalformed when the GET has no challenge.
func (Provider) Handshake(req *webhook.Request, _ webhook.Config) (webhook.Reply, bool, error) {
	if req.Method != http.MethodGet {
		return webhook.Reply{}, false, nil
	}
	challenge := req.Query.Get("challenge")
	if challenge == "" {
		return webhook.Reply{}, true, webhook.Errorf(webhook.ErrMalformed, "verification request has no challenge")
	}
	return webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Body: challenge,
		Headers: map[string]string{"x-content-type-options": "nosniff"}}, true, nil
}

// Events returns the notification as one event. It names the accounts
// whose files changed and carries no id: the key is the body's hash. The
// type is "list_folder", the conversation the account when the
// notification names one ("account:<dbid>"). It returns an error wrapping
// webhook.ErrMalformed when the body is not a JSON object.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	doc, err := jsonpath.Object(req.Body)
	if err != nil {
		return nil, err
	}
	ev := webhook.Event{Type: "list_folder", Body: req.Body}
	if _, ok := jsonpath.Field(doc, "list_folder.accounts.1"); !ok {
		if a := jsonpath.First(doc, "list_folder.accounts.0"); a != "" {
			ev.Conversation = "account:" + a
		}
	}
	return []webhook.Event{ev}, nil
}
