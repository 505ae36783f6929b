// Package provider registers every provider adapter under the name used in
// the webhook path (/webhooks/{tenant}/{provider}). Adding a provider means
// writing its package under pkg/provider and adding one line to Registry.
package provider

import (
	"github.com/hookpack/hookpack/pkg/provider/github"
	"github.com/hookpack/hookpack/pkg/provider/hmac"
	"github.com/hookpack/hookpack/pkg/provider/stripe"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Registry returns the providers this build supports.
func Registry() webhook.Registry {
	return webhook.Registry{
		"github": github.Provider{},
		"stripe": stripe.Provider{},
		"hmac":   hmac.Provider{},
	}
}
