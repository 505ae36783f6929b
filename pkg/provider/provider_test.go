package provider

import (
	"errors"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

var sentinels = []error{
	webhook.ErrMissingSignature, webhook.ErrInvalidSignature, webhook.ErrStale,
	webhook.ErrMalformed, webhook.ErrForbidden, webhook.ErrMisconfigured,
}

func wrapsSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func TestRegistry(t *testing.T) {
	want := []string{
		"asana", "bitbucket", "calendly", "chargebee", "clerk", "coinbase-commerce", "discord", "dropbox",
		"github", "gitlab", "hmac", "hubspot", "intercom", "lemonsqueezy", "line", "linear", "mailgun", "notion",
		"openai", "paddle", "pagerduty", "postmark", "razorpay", "replicate", "resend", "sendgrid", "sentry",
		"shopify", "slack", "square", "standardwebhooks", "stripe", "svix", "telegram", "twilio", "twitch",
		"typeform", "vercel", "whatsapp", "woocommerce", "zendesk", "zoom",
	}
	reg := Registry()
	var got []string
	for name := range reg {
		got = append(got, name)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Registry() = %v, want %v", got, want)
	}
	for name, p := range reg {
		if _, ok := p.(webhook.Signer); !ok {
			t.Errorf("%s does not implement webhook.Signer (make send, the samples and the chaos run sign with it)", name)
		}
		if _, ok := p.(webhook.Checker); !ok {
			t.Errorf("%s does not implement webhook.Checker (scripts/tenant checks inbound.json through it)", name)
		}
	}
	for _, name := range []string{"whatsapp", "slack"} {
		p, _ := reg.Lookup(name)
		if _, ok := p.(webhook.Handshaker); !ok {
			t.Errorf("%s does not implement webhook.Handshaker", name)
		}
	}
}

// TestContract holds every adapter to the webhook.Provider contract: an
// unsigned or forged request never verifies, errors wrap a sentinel and never
// carry the secret.
func TestContract(t *testing.T) {
	const secret = "whsec_c2VjcmV0LXRoYXQtbXVzdC1ub3QtbGVhaw=="
	forged := http.Header{}
	for _, h := range []string{
		"X-Hub-Signature-256", "Stripe-Signature", "X-Shopify-Hmac-Sha256", "X-Twilio-Signature",
		"X-Slack-Signature", "Webhook-Signature", "X-Signature",
	} {
		forged.Set(h, "v1,AAAA")
	}
	forged.Set("Stripe-Signature", "t=1700000000,v1=00")
	forged.Set("X-Slack-Request-Timestamp", "1700000000")
	forged.Set("Webhook-Id", "msg_1")
	forged.Set("Webhook-Timestamp", "1700000000")
	now := time.Unix(1700000000, 0)
	cfg := webhook.Config{Secrets: []string{secret}, Settings: map[string]string{"header": "X-Signature"}}
	for name, p := range Registry() {
		t.Run(name, func(t *testing.T) {
			for _, h := range []http.Header{{}, forged} {
				r := &webhook.Request{Method: http.MethodPost, Header: h, Body: []byte(`{"id":"x"}`), URL: "https://h.example/webhooks/t/" + name}
				err := p.Verify(r, cfg, now)
				if err == nil {
					t.Fatalf("Verify(%v) = nil for an unsigned or forged request", h)
				}
				if !wrapsSentinel(err) {
					t.Errorf("Verify error %v wraps no sentinel", err)
				}
				if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "c2VjcmV0") {
					t.Errorf("Verify error %q leaks the secret", err)
				}
			}
		})
	}
}

// TestSamples verifies and parses every delivery under events/samples with
// its own tenant config, so the samples the demo tooling replays stay valid.
func TestSamples(t *testing.T) {
	all := providertest.Samples(t)
	seen := map[string]bool{}
	for _, s := range all {
		seen[s.Provider] = true
		t.Run(s.Provider+"/"+s.Name, func(t *testing.T) {
			p, ok := Registry().Lookup(s.Provider)
			if !ok {
				t.Fatalf("no provider %q", s.Provider)
			}
			req := s.Request()
			now := time.Now()
			if s.At != 0 {
				now = s.Time()
			}
			hs, isHS := p.(webhook.Handshaker)
			if s.Method == http.MethodGet {
				if !isHS {
					t.Fatal("GET sample for a provider without handshakes")
				}
				reply, ok, err := hs.Handshake(req, s.TenantConfig)
				if err != nil || !ok || reply.Status != http.StatusOK {
					t.Fatalf("Handshake() = %+v, %v, %v", reply, ok, err)
				}
				return
			}
			if err := p.Verify(req, s.TenantConfig, now); err != nil {
				t.Fatalf("Verify() = %v", err)
			}
			if isHS {
				if _, ok, err := hs.Handshake(req, s.TenantConfig); err != nil || ok {
					return // a handshake sample: answered, nothing queued
				}
			}
			evs, err := p.Events(req, s.TenantConfig)
			if err != nil || len(evs) == 0 {
				t.Fatalf("Events() = %d events, %v", len(evs), err)
			}
			for _, ev := range evs {
				if ev.ID == "" && ev.Body == nil {
					t.Errorf("Events() = %+v: want an id or a body to hash", ev)
				}
			}
		})
	}
	for name := range Registry() {
		if name != "svix" && !seen[name] {
			t.Errorf("no sample under events/samples/%s", name)
		}
	}
}

// TestCheck holds every provider's webhook.Checker (what scripts/tenant
// validates inbound.json with) to the samples' own tenant configurations,
// and has it name a setting it does not take and refuse a tenant without
// secrets.
func TestCheck(t *testing.T) {
	configs := providertest.SampleConfigs(t)
	configs["svix"] = configs["standardwebhooks"]
	for name, p := range Registry() {
		t.Run(name, func(t *testing.T) {
			c := p.(webhook.Checker)
			cfg, ok := configs[name]
			if !ok {
				t.Fatalf("no sample configuration for %s", name)
			}
			if err := c.Check(cfg); err != nil {
				t.Errorf("Check(the sample's configuration) = %v", err)
			}
			typo := webhook.Config{Secrets: cfg.Secrets, Settings: map[string]string{"not_a_setting": "x"}}
			for k, v := range cfg.Settings {
				typo.Settings[k] = v
			}
			providertest.Misconfigured(t, c, typo, "not_a_setting")
			providertest.Misconfigured(t, c, webhook.Config{Settings: cfg.Settings})
		})
	}
	hmac, _ := Registry().Lookup("hmac")
	for _, tt := range []struct {
		settings map[string]string
		names    string
	}{
		{map[string]string{"algorithm": "sha256"}, "header"},
		{map[string]string{"header": "X-Sig", "algorithm": "md5"}, "md5"},
		{map[string]string{"header": "X-Sig", "signed": "{timestamp}.{body}"}, "timestamp"},
		{map[string]string{"header": "X-Sig", "timestamp_param": "t"}, "param"},
		{map[string]string{"header": "X-Sig", "id": "body:id"}, "id source"},
		{map[string]string{"header": "X-Sig", "base_url": "ftp://h"}, "base_url"},
	} {
		err := hmac.(webhook.Checker).Check(webhook.Config{Secrets: []string{"s"}, Settings: tt.settings})
		if !errors.Is(err, webhook.ErrMisconfigured) || !strings.Contains(err.Error(), tt.names) {
			t.Errorf("hmac Check(%v) = %v, want %v naming %s", tt.settings, err, webhook.ErrMisconfigured, tt.names)
		}
	}
}
