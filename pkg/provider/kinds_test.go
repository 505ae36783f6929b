package provider

import (
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// kinds are the senders whose scheme a data row cannot express.
var kinds = []string{"asana", "chargebee", "discord", "dropbox", "gitlab", "hubspot", "mailgun", "notion", "postmark", "sendgrid", "telegram", "twitch", "zoom"}

// TestKindsCheck holds each of them to webhook.Checker: its sample's
// configuration passes, a misspelt setting and a missing secret are named.
func TestKindsCheck(t *testing.T) {
	configs := providertest.SampleConfigs(t)
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
			providertest.Misconfigured(t, c, webhook.Config{Secrets: cfg.Secrets, Settings: map[string]string{"tolerence": "300s"}}, "tolerence")
			providertest.Misconfigured(t, c, webhook.Config{}, "secrets")
		})
	}
}
