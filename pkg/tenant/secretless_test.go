package tenant

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// TestValidateSecretlessEntries: a provider whose Checker accepts an entry
// without secrets (a public key setting, an onboarding handshake) loads;
// every other entry without secrets is still refused, naming the field.
func TestValidateSecretlessEntries(t *testing.T) {
	const discordKey = "4e7a0e7babb6da8582b063765fad204017712a4d1a992bae4b1e707698dc2bcc"
	tests := []struct {
		name string
		prov string
		cfg  webhook.Config
		want string // "" when valid
	}{
		{"discord public_key setting", "discord", webhook.Config{Settings: map[string]string{"public_key": discordKey}}, ""},
		{"notion onboarding", "notion", webhook.Config{Settings: map[string]string{"onboarding": "true"}}, ""},
		{"asana onboarding", "asana", webhook.Config{Settings: map[string]string{"onboarding": "true"}}, ""},
		{"discord without a key", "discord", webhook.Config{}, "providers.discord.secrets: at least one secret is required"},
		{"discord with a bad key", "discord", webhook.Config{Settings: map[string]string{"public_key": "abcd"}}, "providers.discord.secrets: at least one secret is required"},
		{"notion not onboarding", "notion", webhook.Config{}, "providers.notion.secrets: at least one secret is required"},
		{"github", "github", webhook.Config{}, "providers.github.secrets: at least one secret is required"},
		{"empty secret with a key setting", "discord", webhook.Config{Secrets: []string{""}, Settings: map[string]string{"public_key": discordKey}}, "providers.discord.secrets[0]: empty secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Inbound{Providers: map[string]webhook.Config{tt.prov: tt.cfg}}.Validate("acme", provider.Registry())
			if tt.want == "" && err != nil || tt.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate(%s %+v) = %v, want %q", tt.prov, tt.cfg, err, tt.want)
			}
		})
	}
}
