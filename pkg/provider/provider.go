// Package provider registers every provider adapter under the name used in
// the webhook path (/webhooks/{tenant}/{provider}). Adding a provider means
// writing its package under pkg/provider, a test that runs the contract suite
// (providertest.Run) with its published vectors, and one line in Registry —
// or, for a sender whose scheme the generic HMAC engine or Standard Webhooks
// express, one row in pkg/provider/catalog.
package provider

import (
	"github.com/hookpack/hookpack/pkg/provider/asana"
	"github.com/hookpack/hookpack/pkg/provider/catalog"
	"github.com/hookpack/hookpack/pkg/provider/chargebee"
	"github.com/hookpack/hookpack/pkg/provider/discord"
	"github.com/hookpack/hookpack/pkg/provider/dropbox"
	"github.com/hookpack/hookpack/pkg/provider/generic"
	"github.com/hookpack/hookpack/pkg/provider/github"
	"github.com/hookpack/hookpack/pkg/provider/gitlab"
	"github.com/hookpack/hookpack/pkg/provider/hubspot"
	"github.com/hookpack/hookpack/pkg/provider/mailgun"
	"github.com/hookpack/hookpack/pkg/provider/notion"
	"github.com/hookpack/hookpack/pkg/provider/postmark"
	"github.com/hookpack/hookpack/pkg/provider/sendgrid"
	"github.com/hookpack/hookpack/pkg/provider/shopify"
	"github.com/hookpack/hookpack/pkg/provider/slack"
	"github.com/hookpack/hookpack/pkg/provider/standardwebhooks"
	"github.com/hookpack/hookpack/pkg/provider/stripe"
	"github.com/hookpack/hookpack/pkg/provider/telegram"
	"github.com/hookpack/hookpack/pkg/provider/twilio"
	"github.com/hookpack/hookpack/pkg/provider/twitch"
	"github.com/hookpack/hookpack/pkg/provider/whatsapp"
	"github.com/hookpack/hookpack/pkg/provider/zoom"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Registry returns the providers this build supports.
func Registry() webhook.Registry {
	reg := webhook.Registry{
		"github":           github.Provider{},
		"stripe":           stripe.Provider{},
		"hmac":             generic.Provider{},
		"shopify":          shopify.Provider{},
		"twilio":           twilio.Provider{},
		"whatsapp":         whatsapp.Provider{},
		"slack":            slack.Provider{},
		"standardwebhooks": standardwebhooks.Provider{},
		"svix":             standardwebhooks.Provider{},
		"gitlab":           gitlab.Provider{},
		"telegram":         telegram.Provider{},
		"postmark":         postmark.Provider{},
		"chargebee":        chargebee.Provider{},
		"discord":          discord.Provider{},
		"sendgrid":         sendgrid.Provider{},
		"hubspot":          hubspot.Provider{},
		"zoom":             zoom.Provider{},
		"twitch":           twitch.Provider{},
		"dropbox":          dropbox.Provider{},
		"notion":           notion.Provider{},
		"asana":            asana.Provider{},
		"mailgun":          mailgun.Provider{},
	}
	for name, s := range catalog.Senders() {
		reg[name] = s
	}
	return reg
}
