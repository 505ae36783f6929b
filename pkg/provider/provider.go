// Package provider registers every provider adapter under the name used in
// the webhook path (/webhooks/{tenant}/{provider}). Adding a provider means
// writing its package under pkg/provider, a test that runs the contract suite
// (providertest.Run) with its published vectors, and one line in Registry —
// or, for a sender whose scheme the generic HMAC engine or Standard Webhooks
// express, one row in pkg/provider/catalog.
package provider

import (
	"github.com/hookpack/hookpack/pkg/provider/catalog"
	"github.com/hookpack/hookpack/pkg/provider/generic"
	"github.com/hookpack/hookpack/pkg/provider/github"
	"github.com/hookpack/hookpack/pkg/provider/shopify"
	"github.com/hookpack/hookpack/pkg/provider/slack"
	"github.com/hookpack/hookpack/pkg/provider/standardwebhooks"
	"github.com/hookpack/hookpack/pkg/provider/stripe"
	"github.com/hookpack/hookpack/pkg/provider/twilio"
	"github.com/hookpack/hookpack/pkg/provider/whatsapp"
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
	}
	for name, s := range catalog.Senders() {
		reg[name] = s
	}
	return reg
}
