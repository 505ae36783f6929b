package sendgrid

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// The test vector of @sendgrid/eventwebhook's own spec
// (sendgrid-nodejs, packages/eventwebhook/src/eventwebhook.spec.js).
const (
	docKey       = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA=="
	docSignature = "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0="
	docTimestamp = "1588788367"
	docPayload   = `{"category":"example_payload","event":"test_event","message_id":"message_id"}`
	otherKey     = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqTxd43gyp8IOEto2LdIfjRQrIbsd4SXZkLW6jDutdhXSJCWHw8REntlo7aNDthvj+y7GjUuFDb/R1NGe1OPzpA=="
)

func newKey(t testing.TB) (priv, pub string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p8, _ := x509.MarshalECPrivateKey(k)
	pk, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return base64.StdEncoding.EncodeToString(p8), base64.StdEncoding.EncodeToString(pk)
}

const batch = `[{"email":"a@example.com","timestamp":1513299569,"event":"processed","sg_event_id":"E1","sg_message_id":"M1"},{"email":"a@example.com","timestamp":1513299570,"event":"delivered","sg_event_id":"E2","sg_message_id":"M1"}]`

func docRequest() *webhook.Request {
	return providertest.Request(map[string]string{SignatureHeader: docSignature, TimestampHeader: docTimestamp}, docPayload)
}

func TestContract(t *testing.T) {
	k1, _ := newKey(t)
	k2, _ := newKey(t)
	k3, _ := newKey(t)
	sample := providertest.SampleVector(t, "sendgrid", "delivered")
	demo, err := providertest.LoadSample(providertest.SamplesDir(), "sendgrid", "delivered")
	if err != nil {
		t.Fatal(err)
	}
	demoPub, _ := publicKey(demo.TenantConfig.Secrets[0])
	der, _ := x509.MarshalPKIXPublicKey(demoPub)
	providertest.Run(t, providertest.Case{
		Provider:   Provider{},
		Request:    providertest.JSON(batch),
		Secrets:    [3]string{k1, k2, k3},
		Signature:  SignatureHeader,
		Retries:    &Retries,
		OtherEvent: providertest.Body(strings.NewReplacer(`"E1"`, `"E3"`, `"E2"`, `"E4"`).Replace(batch)),
		// SendGrid retries a batch that was not answered 2xx for 24 hours,
		// signing each attempt at the time it is sent; events keep their
		// sg_event_id ("Retry logic",
		// https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook#retry-logic).
		Retry:  providertest.Resent,
		Reused: providertest.Replace(`"event":"delivered"`, `"event":"bounce"`),
		Vectors: []providertest.Vector{
			{Name: "@sendgrid/eventwebhook spec", Request: docRequest, Config: webhook.Config{Secrets: []string{docKey}}, At: time.Unix(1588788367, 0)},
			{Name: "spec vector with settings.public_key", Request: docRequest, Config: webhook.Config{Settings: map[string]string{"public_key": docKey}}, At: time.Unix(1588788367, 0)},
			sample,
			{Name: "sample with the verification key only", Request: sample.Request, At: sample.At,
				Config: webhook.Config{Secrets: []string{base64.StdEncoding.EncodeToString(der)}}},
		},
		Tampers: []providertest.Change{
			{Name: "timestamp moved", Apply: providertest.Header(TimestampHeader, "1700000001")},
			{Name: "timestamp removed", Apply: providertest.Header(TimestampHeader, ""), Want: webhook.ErrMissingSignature},
		},
		Malformed: []providertest.Change{
			{Name: "object, not a batch", Apply: providertest.Body(`{"sg_event_id":"E1"}`)},
			{Name: "empty batch", Apply: providertest.Body(`[]`)},
			{Name: "item not an object", Apply: providertest.Body(`[1]`)},
			{Name: "no sg_event_id", Apply: providertest.Body(`[{"event":"open"}]`)},
		},
	})
}

// TestSpecVector runs the rejections of @sendgrid/eventwebhook's spec.
func TestSpecVector(t *testing.T) {
	at := time.Unix(1588788367, 0)
	tests := []struct {
		name                     string
		key, payload, sig, stamp string
		want                     error
	}{
		{"valid", docKey, docPayload, docSignature, docTimestamp, nil},
		{"invalid key", otherKey, docPayload, docSignature, docTimestamp, webhook.ErrInvalidSignature},
		{"bad payload", docKey, "payload", docSignature, docTimestamp, webhook.ErrInvalidSignature},
		{"bad signature", docKey, docPayload, "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH3j/0=", docTimestamp, webhook.ErrInvalidSignature},
		{"bad timestamp", docKey, docPayload, docSignature, "timestamp", webhook.ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := providertest.Request(map[string]string{SignatureHeader: tt.sig, TimestampHeader: tt.stamp}, tt.payload)
			err := Provider{}.Verify(r, webhook.Config{Secrets: []string{tt.key}}, at)
			if !errors.Is(err, tt.want) {
				t.Errorf("Verify() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestEvents(t *testing.T) {
	evs, err := Provider{}.Events(providertest.Request(nil, batch), webhook.Config{})
	if err != nil || len(evs) != 2 {
		t.Fatalf("Events() = %d events, %v; want 2", len(evs), err)
	}
	for i, want := range []struct{ id, typ string }{{"E1", "processed"}, {"E2", "delivered"}} {
		if ev := evs[i]; ev.ID != want.id || ev.Type != want.typ || ev.Conversation != "email:a@example.com" || !strings.HasPrefix(string(ev.Body), `{"email"`) {
			t.Errorf("event %d = id %q type %q conv %q body %s", i, ev.ID, ev.Type, ev.Conversation, ev.Body)
		}
	}
}

func TestKeys(t *testing.T) {
	priv, pub := newKey(t)
	tests := []struct {
		name    string
		secrets []string
		sign    error
		check   string
	}{
		{"private key signs", []string{priv}, nil, ""},
		{"verification key cannot sign", []string{pub}, webhook.ErrMisconfigured, ""},
		{"PEM verification key", []string{"-----BEGIN PUBLIC KEY-----\n" + pub + "\n-----END PUBLIC KEY-----\n"}, webhook.ErrMisconfigured, ""},
		{"not a key", []string{pub, "bm90IGEga2V5"}, webhook.ErrMisconfigured, "secrets[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := webhook.Config{Secrets: tt.secrets}
			if err := (Provider{}).Sign(providertest.Request(nil, batch), cfg, providertest.Now); !errors.Is(err, tt.sign) {
				t.Errorf("Sign() = %v, want %v", err, tt.sign)
			}
			err := Provider{}.Check(cfg)
			if tt.check == "" && err != nil || tt.check != "" && (!errors.Is(err, webhook.ErrMisconfigured) || !strings.Contains(err.Error(), tt.check)) {
				t.Errorf("Check() = %v, want %q", err, tt.check)
			}
		})
	}
}
