package standardwebhooks

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// The specification's own vector, from the reference Go library's tests
// (github.com/standard-webhooks/standard-webhooks,
// libraries/go/webhook_test.go, TestWebhookSign; the same values appear in
// the JavaScript, Python and Ruby library tests and in Svix's docs).
const (
	docSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	docID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	docTS     = "1614265330"
	docBody   = `{"test": 2432232314}`
	docSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	// An invalid signature the same tests use next to the valid one.
	otherSig = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

var docAt = time.Unix(1614265330, 0)

func request(prefix, id, ts, sig, body string) *webhook.Request {
	return providertest.Request(map[string]string{prefix + "Id": id, prefix + "Timestamp": ts, prefix + "Signature": sig}, body)
}

// sign is the v1 signature of the specification: the key is the base64
// after "whsec_".
func sign(secret, id, ts, body string) string {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	return "v1," + base64.StdEncoding.EncodeToString(providertest.MAC(sha256.New, string(key), id, ".", ts, ".", body))
}

func TestContract(t *testing.T) {
	vector := func(family string) providertest.Vector {
		return providertest.Vector{Name: family + "spec vector", At: docAt, Config: webhook.Config{Secrets: []string{docSecret}},
			Request: func() *webhook.Request { return request(family, docID, docTS, docSig, docBody) },
			Headers: []string{family + "Timestamp", family + "Signature"}}
	}
	vectors := []providertest.Vector{
		vector("Webhook-"), vector("Svix-"),
		providertest.SampleVector(t, "standardwebhooks", "spec-vector", "Webhook-Timestamp", "Webhook-Signature"),
		providertest.SampleVector(t, "svix", "invoice-paid", "Svix-Timestamp", "Svix-Signature"),
	}
	for _, family := range []string{"Webhook-", "Svix-"} {
		t.Run(family, func(t *testing.T) {
			providertest.Run(t, providertest.Case{
				Provider: Provider{},
				Request: func() *webhook.Request {
					r := request(family, docID, "", "", `{"type":"invoice.paid","data":{"customer_id":"cus_1"}}`)
					// Leftovers of the other spelling must not shadow the new one.
					r.Header.Set("Webhook-Timestamp", "1")
					r.Header.Set("Webhook-Signature", "v1,AAAA")
					return r
				},
				Secrets:    [3]string{docSecret, "whsec_b3RoZXIta2V5LW90aGVyLWtleQ==", "whsec_dGhpcmQta2V5LXRoaXJkLWtleQ=="},
				Signature:  family + "Signature",
				Retries:    &Retries,
				OtherEvent: providertest.Header(family+"Id", "msg_other"),
				// The spec's webhook-id "will be the same when the same
				// webhook is being resent (e.g. due to a previous failure)";
				// only webhook-timestamp and the signature are new
				// (standard-webhooks/spec/standard-webhooks.md).
				Retry:   providertest.Resent,
				Reused:  providertest.Replace("cus_1", "cus_2"),
				Vectors: vectors,
				Tampers: []providertest.Change{
					{Name: "id changed", Apply: providertest.Header(family+"Id", "msg_other")},
					{Name: "id removed", Apply: providertest.Header(family+"Id", ""), Want: webhook.ErrMissingSignature},
					{Name: "timestamp removed", Apply: func(r *webhook.Request) {
						r.Header.Del(family + "Timestamp")
						r.Header.Del("Webhook-Timestamp")
					}, Want: webhook.ErrMissingSignature},
				},
				// A body that is not JSON is accepted (no type), so the only
				// malformed delivery is one without an id.
				Malformed: []providertest.Change{
					{Name: "no id", Apply: providertest.Header(family+"Id", "")},
				},
			})
		})
	}
}

func TestVerify(t *testing.T) {
	seed := sha256.Sum256([]byte("standardwebhooks test key"))
	priv := ed25519.NewKeyFromSeed(seed[:])
	pub := "whpk_" + base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
	v1a := "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(docID+"."+docTS+"."+docBody)))

	tests := []struct {
		name    string
		secrets []string
		set     map[string]string
		prefix  string
		id, ts  string
		sig     string
		body    string
		now     time.Time
		want    error
	}{
		{"secret without whsec_ prefix", []string{strings.TrimPrefix(docSecret, "whsec_")}, nil, "Webhook-", docID, docTS, docSig, docBody, docAt, nil},
		{"multi signature: any match wins", []string{docSecret}, nil, "Webhook-", docID, docTS, otherSig + " v2,abc " + docSig + " " + otherSig, docBody, docAt, nil},
		{"asymmetric v1a", []string{pub}, nil, "Webhook-", docID, docTS, v1a, docBody, docAt, nil},
		{"asymmetric key does not accept v1", []string{pub}, nil, "Webhook-", docID, docTS, docSig, docBody, docAt, webhook.ErrInvalidSignature},
		{"invalid signature", []string{docSecret}, nil, "Webhook-", docID, docTS, otherSig, docBody, docAt, webhook.ErrInvalidSignature},
		{"tolerance setting", []string{docSecret}, map[string]string{"tolerance": "1h"}, "Webhook-", docID, docTS, docSig, docBody, docAt.Add(30 * time.Minute), nil},
		{"timestamp not a number", []string{docSecret}, nil, "Webhook-", docID, "2021-02-25", docSig, docBody, docAt, webhook.ErrMissingSignature},
		{"only unknown versions", []string{docSecret}, nil, "Webhook-", docID, docTS, "v2,abc", docBody, docAt, webhook.ErrMissingSignature},
		{"v1 not base64", []string{docSecret}, nil, "Webhook-", docID, docTS, "v1,***", docBody, docAt, webhook.ErrInvalidSignature},
		{"secret not base64", []string{"whsec_***"}, nil, "Webhook-", docID, docTS, docSig, docBody, docAt, webhook.ErrMisconfigured},
		{"public key not a key", []string{"whpk_AAAA"}, nil, "Webhook-", docID, docTS, v1a, docBody, docAt, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Provider{}.Verify(request(tt.prefix, tt.id, tt.ts, tt.sig, tt.body), webhook.Config{Secrets: tt.secrets, Settings: tt.set}, tt.now)
			if !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q) = %v, want %v", tt.sig, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") {
				t.Errorf("Verify error %q leaks the secret", err)
			}
		})
	}
}

func TestParseSignatures(t *testing.T) {
	s := parseSignatures("  v1,AAAA  v1a,AAAA v2,AAAA v1 v1,*** ,AAAA v1,")
	if len(s.v1) != 1 || len(s.v1a) != 1 || s.bad != 2 {
		t.Errorf("parseSignatures = %d v1, %d v1a, %d bad; want 1, 1, 2", len(s.v1), len(s.v1a), s.bad)
	}
}

func TestEvents(t *testing.T) {
	body := `{"type":"invoice.paid","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"in_1","customer_id":"cus_7"}}`
	tests := []struct {
		name     string
		prefix   string
		set      map[string]string
		body     string
		wantType string
		wantConv string
	}{
		{"defaults", "Webhook-", nil, body, "invoice.paid", "msg_1"},
		{"conversation path", "Webhook-", map[string]string{"conversation": "data.customer_id"}, body, "invoice.paid", "cus_7"},
		{"missing conversation path falls back to id", "Webhook-", map[string]string{"conversation": "data.nope"}, body, "invoice.paid", "msg_1"},
		{"type path", "Svix-", map[string]string{"type": "data.id"}, body, "in_1", "msg_1"},
		{"non-JSON body", "Webhook-", map[string]string{"conversation": "data.customer_id"}, "plain", "", "msg_1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := providertest.OneEvent(t, Provider{}, request(tt.prefix, "msg_1", docTS, docSig, tt.body), webhook.Config{Settings: tt.set})
			if ev.ID != "msg_1" || ev.Type != tt.wantType || ev.Conversation != tt.wantConv || string(ev.Body) != tt.body {
				t.Errorf("Events() = id %q type %q conv %q; want msg_1 %q %q", ev.ID, ev.Type, ev.Conversation, tt.wantType, tt.wantConv)
			}
		})
	}
	if _, err := (Provider{}).Events(request("Webhook-", "", docTS, docSig, body), webhook.Config{}); !errors.Is(err, webhook.ErrMalformed) {
		t.Errorf("Events(no id) = %v, want ErrMalformed", err)
	}
}

func FuzzParseSignatures(f *testing.F) {
	f.Add(docSig + " " + otherSig)
	f.Add("v1a,AAAA v1,")
	f.Add(",,, v1,,, v1,=")
	f.Fuzz(func(t *testing.T, h string) {
		s := parseSignatures(h)
		if n := len(s.v1) + len(s.v1a) + s.bad; n > len(strings.Fields(h)) {
			t.Fatalf("parseSignatures(%q) found %d entries in %d fields", h, n, len(strings.Fields(h)))
		}
		for _, b := range append(s.v1, s.v1a...) {
			if len(b) == 0 {
				t.Fatalf("parseSignatures(%q) kept an empty signature", h)
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	f.Add(docID, docTS, docSig, []byte(docBody))
	f.Add("", "0", "v1,", []byte(""))
	f.Add("id", "1614265330", "v1,AAAA v1a,AAAA", []byte("{}"))
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		err := Provider{}.Verify(request("Webhook-", id, ts, sig, string(body)), webhook.Config{Secrets: []string{docSecret}}, docAt)
		if err != nil {
			return
		}
		want := sign(docSecret, strings.TrimSpace(id), strings.TrimSpace(ts), string(body))
		for _, f := range strings.Fields(sig) {
			if f == want {
				return
			}
		}
		t.Fatalf("Verify(%q, %q, %q) = nil without the real signature", id, ts, sig)
	})
}

func FuzzEvents(f *testing.F) {
	// Seeds of the former differential test against the encoding/json
	// implementation, which is now the implementation.
	for _, seed := range []string{
		`{"type":"invoice.paid","data":{"customer_id":"cus_1","n":[1,{"x":"<"}]}}`, `{"test": 2432232314}`,
		`{"type":{"b":1,"a":2},"data":{"customer_id":""}}`, `{"type":null}`, `[{"type":"x"}]`, `not json`, `{"type":"t"} x`, ``,
	} {
		f.Add("msg_1", []byte(seed), "data.customer_id")
		f.Add("msg_1", []byte(seed), "data.n")
	}
	f.Add("msg_1", []byte(`{"type":"a","data":{"c":"x"}}`), "data.c")
	f.Add("m", []byte(`[]`), "0")
	f.Add("", []byte(`{}`), "")
	f.Fuzz(func(t *testing.T, id string, body []byte, conv string) {
		r := request("Webhook-", id, "1", "v1,AAAA", string(body))
		evs, err := Provider{}.Events(r, webhook.Config{Settings: map[string]string{"conversation": conv}})
		if err != nil && !errors.Is(err, webhook.ErrMalformed) {
			t.Fatalf("Events() error %v does not wrap ErrMalformed", err)
		}
		for _, ev := range evs {
			if ev.ID == "" || ev.Conversation == "" {
				t.Fatalf("Events() = %+v: want an id and a conversation", ev)
			}
		}
	})
}

func TestSignErrors(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		secrets []string
		want    error
	}{
		{"no webhook-id", "", []string{docSecret}, webhook.ErrMalformed},
		{"no secrets", docID, nil, webhook.ErrMisconfigured},
		{"public key cannot sign", docID, []string{"whpk_MCowBQYDK2VwAyEA"}, webhook.ErrMisconfigured},
		{"secret not base64", docID, []string{"whsec_***"}, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &webhook.Request{Method: http.MethodPost, Header: http.Header{}, Body: []byte(docBody)}
			if tt.id != "" {
				req.Header.Set("Webhook-Id", tt.id)
			}
			if err := (Provider{}).Sign(req, webhook.Config{Secrets: tt.secrets}, docAt); !errors.Is(err, tt.want) {
				t.Errorf("Sign() = %v, want %v", err, tt.want)
			}
		})
	}
}
