package provider

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// kinds are the senders whose scheme a data row cannot express.
var kinds = []string{"asana", "chargebee", "discord", "dropbox", "gitlab", "hubspot", "mailgun", "notion", "postmark", "sendgrid", "telegram", "twitch", "zoom"}

// TestKindsCheck holds each of them to webhook.Checker: its sample's
// configuration passes, a misspelt setting and a missing secret are named.
func TestKindsCheck(t *testing.T) {
	all, err := providertest.LoadSamples(providertest.SamplesDir())
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]webhook.Config{}
	for _, s := range all {
		configs[s.Provider] = s.TenantConfig
	}
	for _, name := range kinds {
		t.Run(name, func(t *testing.T) {
			p, ok := Registry().Lookup(name)
			if !ok {
				t.Fatalf("%s is not registered", name)
			}
			c, ok := p.(webhook.Checker)
			if !ok {
				t.Fatalf("%s implements no webhook.Checker", name)
			}
			cfg := configs[name]
			if err := c.Check(cfg); err != nil {
				t.Errorf("Check(the sample's configuration) = %v", err)
			}
			typo := webhook.Config{Secrets: cfg.Secrets, Settings: map[string]string{"tolerence": "300s"}}
			if err := c.Check(typo); !errors.Is(err, webhook.ErrMisconfigured) || !strings.Contains(err.Error(), "tolerence") {
				t.Errorf("Check(a misspelt setting) = %v, want %v naming it", err, webhook.ErrMisconfigured)
			}
			if err := c.Check(webhook.Config{}); !errors.Is(err, webhook.ErrMisconfigured) || !strings.Contains(err.Error(), "secrets") {
				t.Errorf("Check(nothing) = %v, want %v naming secrets", err, webhook.ErrMisconfigured)
			}
		})
	}
}
