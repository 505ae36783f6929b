// Package telegram verifies and parses Telegram Bot API webhook updates:
// the secret_token given to setWebhook, sent back as
// X-Telegram-Bot-Api-Secret-Token and compared in constant time, and the
// update_id Telegram keeps when it sends an update again.
// docs/providers/telegram.md describes the scheme, ids and conversations.
package telegram

import (
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/provider/internal/token"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Header carries setWebhook's secret_token.
const Header = "X-Telegram-Bot-Api-Secret-Token"

// Provider implements webhook.Provider, webhook.Signer and webhook.Checker
// for Telegram.
type Provider struct{}

var (
	_ webhook.Provider = Provider{}
	_ webhook.Signer   = Provider{}
	_ webhook.Checker  = Provider{}
)

// Verify checks the secret token against every secret in constant time. It
// returns an error wrapping webhook.ErrMissingSignature when the header is
// absent, webhook.ErrInvalidSignature when no secret matches, and
// webhook.ErrMisconfigured when the tenant has no secrets.
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	return token.Verify(req, cfg, "telegram", Header)
}

// Sign sets the secret token header to cfg.Secrets[0].
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, _ time.Time) error {
	return token.Sign(req, cfg, "telegram", Header)
}

// Check reports a tenant entry without secrets, with a setting (Telegram
// takes none), or with a secret setWebhook
// refuses: 1 to 256 characters of A-Z, a-z, 0-9, _ and -. Errors name the
// entry by position, never its value.
func (Provider) Check(cfg webhook.Config) error {
	if err := cfg.CheckSettings("telegram", nil, nil); err != nil {
		return err
	}
	for i, s := range cfg.Secrets {
		if len(s) > 256 || strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
			return webhook.Errorf(webhook.ErrMisconfigured, "telegram: secrets[%d] is no valid secret_token (1-256 of A-Z, a-z, 0-9, _ and -)", i)
		}
	}
	return nil
}

// kinds are the Update fields that hold the update's object, in the order
// the Bot API lists them; the first present is the type.
var kinds = []string{
	"message", "edited_message", "channel_post", "edited_channel_post", "business_connection",
	"business_message", "edited_business_message", "deleted_business_messages", "message_reaction",
	"message_reaction_count", "inline_query", "chosen_inline_result", "callback_query",
	"shipping_query", "pre_checkout_query", "purchased_paid_media", "poll", "poll_answer",
	"my_chat_member", "chat_member", "chat_join_request", "chat_boost", "removed_chat_boost",
}

// chatPaths locate the chat of an update's object, tried in order.
var chatPaths = []string{"chat.id", "message.chat.id", "user_chat_id", "from.id", "user.id", "voter_chat.id"}

// Events returns the update as one event: id "update:<update_id>" (unique
// per bot, and the same when Telegram sends the update again), the kind of
// object it carries as type, and its chat as conversation. It returns an
// error wrapping webhook.ErrMalformed when the body is not a JSON object or
// has no update_id.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	doc, err := jsonpath.Object(req.Body)
	if err != nil {
		return nil, err
	}
	id, err := jsonpath.Required(doc, "update", "update_id")
	if err != nil {
		return nil, err
	}
	ev := webhook.Event{ID: "update:" + id, Body: req.Body}
	for _, k := range kinds {
		if _, ok := jsonpath.Field(doc, k); ok {
			ev.Type = k
			for _, p := range chatPaths {
				if c := jsonpath.First(doc, k+"."+p); c != "" {
					ev.Conversation = "chat:" + c
					break
				}
			}
			break
		}
	}
	return []webhook.Event{ev}, nil
}
