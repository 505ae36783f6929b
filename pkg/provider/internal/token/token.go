// Package token verifies the senders that authenticate a delivery with a
// shared secret sent as it is (a header token, basic auth credentials)
// rather than a signature: GitLab, Telegram, Postmark, Chargebee. Nothing
// ties the secret to the body, so a captured delivery can be re-sent with
// another body; the idempotency key (a signed-equivalent id or a content
// hash) then answers it 409 or queues it as new content, as the sender's
// own documentation accepts.
package token

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Verify checks that header carries one of cfg.Secrets, compared in
// constant time (webhook.MatchToken). It returns an error wrapping
// webhook.ErrMissingSignature when the header is absent,
// webhook.ErrInvalidSignature when no secret matches, and
// webhook.ErrMisconfigured when the tenant has no secrets. name is the
// sender, for messages.
func Verify(req *webhook.Request, cfg webhook.Config, name, header string) error {
	got := req.Header.Get(header)
	if strings.TrimSpace(got) == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "%s header is required", header)
	}
	if err := cfg.CheckSecrets(name); err != nil {
		return err
	}
	if !webhook.MatchToken(cfg.Secrets, got) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured secret matches %s", header)
	}
	return nil
}

// Sign sets header to cfg.Secrets[0]. It returns an error wrapping
// webhook.ErrMisconfigured when the tenant has no secrets.
func Sign(req *webhook.Request, cfg webhook.Config, name, header string) error {
	if err := cfg.CheckSecrets(name); err != nil {
		return err
	}
	req.SetHeader(header, cfg.Secrets[0])
	return nil
}

// VerifyBasic checks the Authorization header's basic auth credentials
// against cfg.Secrets, each written "user:password". It returns the errors
// of webhook.BasicAuth, an error wrapping webhook.ErrInvalidSignature when no
// secret matches, and webhook.ErrMisconfigured when the tenant has no
// secrets.
func VerifyBasic(req *webhook.Request, cfg webhook.Config, name string) error {
	got, err := webhook.BasicAuth(req)
	if err != nil {
		return err
	}
	if err := cfg.CheckSecrets(name); err != nil {
		return err
	}
	if !webhook.MatchToken(cfg.Secrets, got) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured credentials match the basic auth")
	}
	return nil
}

// SignBasic sets basic auth credentials cfg.Secrets[0] ("user:password").
// It returns an error wrapping webhook.ErrMisconfigured when the tenant has
// no secrets, or the first is not "user:password".
func SignBasic(req *webhook.Request, cfg webhook.Config, name string) error {
	if err := CheckBasic(cfg, name); err != nil {
		return err
	}
	webhook.SetBasicAuth(req, cfg.Secrets[0])
	return nil
}

// CheckBasic is the Check of basic-auth senders: at least one secret, each
// written "user:password", and no setting (they take none). Errors name the
// entry by position, never its value.
func CheckBasic(cfg webhook.Config, name string) error {
	if err := cfg.CheckSettings(name, nil, nil); err != nil {
		return err
	}
	for i, s := range cfg.Secrets {
		if !strings.Contains(s, ":") {
			return webhook.Errorf(webhook.ErrMisconfigured, "%s: secrets[%d] must be \"user:password\", the credentials set in the webhook URL", name, i)
		}
	}
	return nil
}

// Onboarding is the setting that lets a sender's unsigned handshake hand
// the pack a new signing secret (Asana's X-Hook-Secret, Notion's
// verification_token): while it is "true", a handshake with a secret not
// yet configured is forwarded to the tenant's target as an event, so the
// operator can add the secret to the tenant's secrets.
const Onboarding = "onboarding"

// Handshake decides an unsigned handshake that carries secret: known
// reports that secret is configured already (answer it, queue nothing);
// otherwise, with the onboarding setting on, forward is true (queue it for
// the tenant, which learns the secret that way); otherwise it returns an
// error wrapping webhook.ErrForbidden, so that nobody can push a secret of
// their own through a tenant that is not onboarding. The comparison is in
// constant time, and errors never show the secret.
func Handshake(cfg webhook.Config, name, secret string) (known, forward bool, err error) {
	if webhook.MatchToken(cfg.Secrets, secret) {
		return true, false, nil
	}
	if cfg.Settings[Onboarding] == "true" {
		return false, true, nil
	}
	return false, false, webhook.Errorf(webhook.ErrForbidden, "%s: the handshake's secret is not configured for this tenant (set settings.onboarding to \"true\" to receive it)", name)
}

// Answer is a Handshaker's answer to a handshake that carries secret, as
// Handshake decides it: reply, sent with nothing queued, when the secret is
// configured already; ok false while the tenant is onboarding, so that
// Events queues the handshake; Handshake's error (ok true) otherwise.
func Answer(cfg webhook.Config, name, secret string, reply webhook.Reply) (webhook.Reply, bool, error) {
	known, _, err := Handshake(cfg, name, secret)
	switch {
	case err != nil:
		return webhook.Reply{}, true, err
	case known:
		return reply, true, nil
	}
	return webhook.Reply{}, false, nil
}

// HandshakeID is the id of the event that forwards a handshake's secret to
// an onboarding tenant: kind, ":" and a hash of the secret, so that the
// sender's repeated handshake is a duplicate and the id never shows the
// secret.
func HandshakeID(kind, secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return kind + ":" + hex.EncodeToString(sum[:16])
}

// CheckOnboarding is the Check of senders with an onboarding handshake: no
// setting but onboarding, and secrets unless onboarding is on.
func CheckOnboarding(cfg webhook.Config, name string) error {
	if cfg.Settings[Onboarding] == "true" && len(cfg.Secrets) == 0 {
		cfg.Secrets = []string{Onboarding} // stands in for the secret the handshake brings
	}
	if err := cfg.CheckSettings(name, nil, []string{Onboarding}); err != nil {
		return fmt.Errorf("%w (or settings.onboarding \"true\" to receive the secret from the sender's handshake)", err)
	}
	return nil
}
