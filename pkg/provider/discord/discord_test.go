package discord

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// key returns the private key (hex) of a seed: its bytes when it has 32,
// else its SHA-256.
func key(seed string) string {
	s := []byte(seed)
	if len(s) != ed25519.SeedSize {
		sum := sha256.Sum256(s)
		s = sum[:]
	}
	return hex.EncodeToString(ed25519.NewKeyFromSeed(s))
}

func public(priv string) string {
	b, _ := hex.DecodeString(priv)
	return hex.EncodeToString(ed25519.PrivateKey(b).Public().(ed25519.PublicKey))
}

const command = `{"application_id":"11","channel_id":"C1","data":{"id":"D1","name":"ping","type":1},"guild_id":"G1","id":"I1","member":{"user":{"id":"U1"}},"token":"tok","type":2,"version":1}`

// The demo key pair of events/samples/discord: tweetnacl's
// nacl.sign.keyPair.fromSeed of this seed signed the samples.
const demoSeed = "hookpack demo discord key seed!!"

func TestContract(t *testing.T) {
	headers := []string{SignatureHeader, TimestampHeader}
	demoPublic := webhook.Config{Secrets: []string{public(key(demoSeed))}}
	sample := providertest.SampleVector(t, "discord", "command-ping", headers...)
	providertest.Run(t, providertest.Case{
		Provider:   Provider{},
		Request:    providertest.JSON(command),
		Secrets:    [3]string{key("suite discord key one"), key("suite discord key two"), key("suite discord key three")},
		Signature:  SignatureHeader,
		Retries:    &Retries,
		OtherEvent: providertest.Replace(`"id":"I1"`, `"id":"I2"`),
		// Discord sends an interaction once and does not retry it (the
		// user sees "The application did not respond" after 3 seconds,
		// https://discord.com/developers/docs/interactions/receiving-and-responding#responding-to-an-interaction);
		// the only second delivery is the same request again.
		Retry: providertest.Resent,
		Reused: func(r *webhook.Request) {
			r.Body = []byte(strings.Replace(command, `"name":"ping"`, `"name":"pong"`, 1))
		},
		Vectors: []providertest.Vector{
			sample,
			providertest.SampleVector(t, "discord", "ping", headers...),
			{Name: "tweetnacl sample with the public key only", Request: sample.Request, Config: demoPublic, At: sample.At},
			{Name: "tweetnacl sample with settings.public_key", Request: sample.Request, At: sample.At,
				Config: webhook.Config{Settings: map[string]string{"public_key": demoPublic.Secrets[0]}}},
		},
		Tampers: []providertest.Change{
			{Name: "timestamp moved", Apply: providertest.Header(TimestampHeader, "1700000001")},
			{Name: "timestamp removed", Apply: providertest.Header(TimestampHeader, ""), Want: webhook.ErrMissingSignature},
			{Name: "short signature", Apply: func(r *webhook.Request) { r.Header.Set(SignatureHeader, r.Header.Get(SignatureHeader)[:64]) }},
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: providertest.Body("{")},
			{Name: "no type", Apply: providertest.Body(`{"id":"I1"}`)},
			{Name: "interaction without id", Apply: providertest.Body(`{"type":2}`)},
		},
		Handshakes: []providertest.Handshake{
			{Name: "interaction PING", Signed: true, OK: true, Request: providertest.JSON(`{"id":"I0","type":1,"version":1}`),
				Reply: webhook.Reply{Status: http.StatusOK, ContentType: "application/json", Body: `{"type":1}`}},
			{Name: "webhook events PING", Signed: true, OK: true, Request: providertest.JSON(`{"version":1,"application_id":"11","type":0}`),
				Reply: webhook.Reply{Status: http.StatusNoContent}},
			{Name: "webhook event", Signed: true, Request: providertest.JSON(`{"version":1,"application_id":"11","type":1,"event":{"type":"APPLICATION_AUTHORIZED","timestamp":"2024-10-18T14:42:53.064834","data":{}}}`)},
			{Name: "GET", Request: func() *webhook.Request { r := providertest.JSON("")(); r.Method = http.MethodGet; return r }},
		},
	})
}

func TestRespond(t *testing.T) {
	tests := []struct {
		name, body string
		settings   map[string]string
		want       webhook.Reply
		ok         bool
	}{
		{"command is deferred", command, nil, webhook.Reply{Status: 200, ContentType: "application/json", Body: `{"type":5}`}, true},
		{"ephemeral", command, map[string]string{"ephemeral": "true"}, webhook.Reply{Status: 200, ContentType: "application/json", Body: `{"type":5,"data":{"flags":64}}`}, true},
		{"component update is deferred", `{"id":"I","type":3,"data":{"custom_id":"b"}}`, nil, webhook.Reply{Status: 200, ContentType: "application/json", Body: `{"type":6}`}, true},
		{"modal submit", `{"id":"I","type":5,"data":{"custom_id":"m"}}`, nil, webhook.Reply{Status: 200, ContentType: "application/json", Body: `{"type":5}`}, true},
		{"autocomplete", `{"id":"I","type":4,"data":{"name":"c"}}`, nil, webhook.Reply{Status: 200, ContentType: "application/json", Body: `{"type":8,"data":{"choices":[]}}`}, true},
		{"webhook event", `{"version":1,"type":1,"event":{"type":"ENTITLEMENT_CREATE"}}`, nil, webhook.Reply{Status: http.StatusNoContent}, true},
		{"unknown interaction type", `{"id":"I","type":9}`, nil, webhook.Reply{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply, ok := Provider{}.Respond(providertest.JSON(tt.body)(), webhook.Config{Settings: tt.settings}, nil)
			if ok != tt.ok || !reply.Equal(tt.want) {
				t.Errorf("Respond() = %+v, %v; want %+v, %v", reply, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestEvents(t *testing.T) {
	tests := []struct{ name, body, wantID, wantType, wantConv string }{
		{"command", command, "I1", "interaction.2:ping", "channel:C1"},
		{"component", `{"id":"I3","type":3,"channel":{"id":"C9"},"data":{"custom_id":"approve"}}`, "I3", "interaction.3:approve", "channel:C9"},
		{"DM command without channel", `{"id":"I4","type":2,"user":{"id":"U7"},"data":{"name":"x"}}`, "I4", "interaction.2:x", "user:U7"},
		{"webhook event", `{"version":1,"application_id":"11","type":1,"event":{"type":"APPLICATION_AUTHORIZED","data":{"guild":{"id":"G5"}}}}`, "", "APPLICATION_AUTHORIZED", "guild:G5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			providertest.WantEvent(t, Provider{}, providertest.JSON(tt.body)(), webhook.Config{}, webhook.Event{ID: tt.wantID, Type: tt.wantType, Conversation: tt.wantConv})
		})
	}
}

func TestKeys(t *testing.T) {
	priv := key(demoSeed)
	signed := providertest.JSON(command)()
	if err := (Provider{}).Sign(signed, webhook.Config{Secrets: []string{priv}}, providertest.Now); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		secrets []string
		sign    error
		verify  error
		check   string
	}{
		{"private key", []string{priv}, nil, nil, ""},
		{"public key verifies, cannot sign", []string{public(priv)}, webhook.ErrMisconfigured, nil, ""},
		{"not hex", []string{"xyz"}, webhook.ErrMisconfigured, webhook.ErrMisconfigured, "secrets[0]"},
		{"wrong length", []string{public(priv), "abcd"}, webhook.ErrMisconfigured, webhook.ErrMisconfigured, "secrets[1]"},
		{"no key", nil, webhook.ErrMisconfigured, webhook.ErrMisconfigured, "settings.public_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := webhook.Config{Secrets: tt.secrets}
			if err := (Provider{}).Sign(providertest.JSON(command)(), cfg, providertest.Now); !errors.Is(err, tt.sign) {
				t.Errorf("Sign() = %v, want %v", err, tt.sign)
			}
			if err := (Provider{}).Verify(signed, cfg, providertest.Now); !errors.Is(err, tt.verify) {
				t.Errorf("Verify() = %v, want %v", err, tt.verify)
			}
			err := Provider{}.Check(cfg)
			if tt.check == "" && err != nil || tt.check != "" && (!errors.Is(err, webhook.ErrMisconfigured) || !strings.Contains(err.Error(), tt.check)) {
				t.Errorf("Check() = %v, want %q", err, tt.check)
			}
		})
	}
	if err := (Provider{}).Check(webhook.Config{}); err == nil || !strings.Contains(err.Error(), "secrets") {
		t.Errorf("Check(nothing) = %v, want the missing secrets named", err)
	}
	providertest.Misconfigured(t, Provider{}, webhook.Config{Secrets: []string{priv}, Settings: map[string]string{"tolerance": "-1"}})
}

func BenchmarkVerify(b *testing.B) {
	req := providertest.JSON(command)()
	cfg := webhook.Config{Secrets: []string{key(demoSeed)}}
	_ = Provider{}.Sign(req, cfg, time.Unix(1_700_000_000, 0))
	pub := webhook.Config{Secrets: []string{public(cfg.Secrets[0])}}
	for i := 0; i < b.N; i++ {
		if err := (Provider{}).Verify(req, pub, time.Unix(1_700_000_000, 0)); err != nil {
			b.Fatal(err)
		}
	}
}
