package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/apigw"
	"github.com/hookpack/hookpack/pkg/local/awscount"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/logtest"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// adversary is one provider as an attacker holding a captured delivery
// meets it: its sample delivery, the header carrying the signature, the
// unsigned headers it reads, whether it signs a timestamp.
type adversary struct {
	provider, sample, sigHeader string
	unsigned                    []string
	timestamped                 bool
	required                    string // a header Events requires, "" when none
}

var adversaries = []adversary{
	{"github", "issues-opened", "X-Hub-Signature-256", []string{"X-GitHub-Delivery"}, false, "X-GitHub-Event"},
	{"shopify", "orders-create", "X-Shopify-Hmac-Sha256", []string{"X-Shopify-Event-Id", "X-Shopify-Webhook-Id"}, false, "X-Shopify-Topic"},
	{"stripe", "customer-created", "Stripe-Signature", nil, true, ""},
	{"slack", "event-message", "X-Slack-Signature", nil, true, ""},
	{"svix", "invoice-paid", "Svix-Signature", nil, true, ""},
	{"whatsapp", "message-text", "X-Hub-Signature-256", nil, false, ""},
	{"twilio", "sms-received", "X-Twilio-Signature", []string{"I-Twilio-Idempotency-Token"}, false, ""},
	{"hmac", "paddle-transaction-paid", "Paddle-Signature", nil, true, ""},
}

// TestAdversarialDeliveriesThroughTheLocalAPI sends every provider's sample
// delivery, broken in every way an attacker or a confused sender can break
// it, through the local HTTP API (apigw) to the real handler on emulators:
// each row answers the right status with a message saying what is wrong,
// and writes nothing to DynamoDB or SQS (the SDK requests are counted). The
// logs of the whole run hold no secret, signature or raw body.
func TestAdversarialDeliveriesThroughTheLocalAPI(t *testing.T) {
	reg := provider.Registry()
	acme := tenant.Inbound{Providers: map[string]webhook.Config{}}
	globex := tenant.Inbound{Providers: map[string]webhook.Config{}}
	deliveries := map[string]providertest.Sample{}
	var secrets []string
	for _, a := range adversaries {
		s, err := providertest.LoadSample(providertest.SamplesDir(), a.provider, a.sample)
		if err != nil {
			t.Fatal(err)
		}
		deliveries[a.provider] = s
		acme.Providers[a.provider] = s.TenantConfig
		other := "globex-" + a.provider + "-secret"
		if strings.HasPrefix(s.TenantConfig.Secrets[0], "whsec_") {
			other = "whsec_" + base64.StdEncoding.EncodeToString([]byte(other))
		}
		globex.Providers[a.provider] = webhook.Config{Secrets: []string{other}, Settings: s.TenantConfig.Settings}
		secrets = append(secrets, s.TenantConfig.Secrets[0], other)
	}
	e := emulate(t, awstest.Moto(t), 3, map[string]tenant.Inbound{"acme": acme, "globex": globex})
	base, name, pair := e.cfg, e.name, e.pair

	counter := awscount.New()
	logs := &logtest.Buffer{}
	// The lines are checked without their time: its nanoseconds may hold a
	// short secret's digits (Twilio's documented token is "12345").
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	h := NewAWS(counter.Install(base), Settings{IdempotencyTable: name, ParameterPrefix: "/" + name,
		QueueURLTemplate: strings.Replace(pair.URL, "-acme.fifo", "-{tenant}.fifo", 1)}, logger)
	srv := httptest.NewServer(apigw.Server(apigw.Route{Methods: []string{"GET", "POST"}, Path: "/webhooks/{tenant}/{provider}"}, h.Handle, 10*time.Second, logger))
	defer srv.Close()

	// delivery is one HTTP request as the attacker sends it.
	type delivery struct {
		method, path string
		header       http.Header
		body         []byte
	}
	var signatures []string
	signed := func(t *testing.T, a adversary, tenantID string, cfg webhook.Config, body []byte, at time.Time) delivery {
		t.Helper()
		req := deliveries[a.provider].Request()
		req.Tenant, req.Provider = tenantID, a.provider
		path := "/webhooks/" + tenantID + "/" + a.provider
		req.URL = srv.URL + path
		if q := req.Query.Encode(); q != "" {
			req.URL += "?" + q
			path += "?" + q
		}
		if body != nil {
			req.Body = body
		}
		if err := reg[a.provider].(webhook.Signer).Sign(req, cfg, at); err != nil {
			t.Fatalf("Sign() = %v", err)
		}
		signatures = append(signatures, req.Header.Get(a.sigHeader))
		if _, q, ok := strings.Cut(req.URL, "?"); ok { // Sign may add bodySHA256
			path = strings.SplitN(path, "?", 2)[0] + "?" + q
		}
		return delivery{method: "POST", path: path, header: req.Header, body: req.Body}
	}
	send := func(t *testing.T, d delivery) (int, string) {
		t.Helper()
		resp, b := providertest.Send(t, d.method, srv.URL+d.path, d.header, d.body)
		var msg struct{ Error, Message string }
		_ = json.Unmarshal(b, &msg)
		if msg.Error == "" {
			msg.Error = msg.Message
		}
		if msg.Error == "" {
			msg.Error = string(b)
		}
		return resp.StatusCode, msg.Error
	}
	now := time.Now()

	type row struct {
		name     string
		applies  func(a adversary) bool
		build    func(t *testing.T, a adversary) delivery
		status   int
		contains string
		// before is sent (and must be accepted) ahead of the row, writes
		// and all: the row replays it.
		before func(t *testing.T, a adversary) delivery
	}
	all := func(adversary) bool { return true }
	valid := func(t *testing.T, a adversary) delivery {
		return signed(t, a, "acme", acme.Providers[a.provider], nil, now)
	}
	with := func(f func(d *delivery, a adversary)) func(t *testing.T, a adversary) delivery {
		return func(t *testing.T, a adversary) delivery { d := valid(t, a); f(&d, a); return d }
	}
	// JSON-shape rows: providers whose adapter reads the body as JSON
	// (Twilio's is a form; the payload of Standard Webhooks (svix) is opaque unless a
	// conversation path is configured).
	json := func(a adversary) bool { return a.provider != "twilio" && a.provider != "svix" }
	rows := []row{
		{name: "bad signature", applies: all, build: with(func(d *delivery, a adversary) {
			v := d.header.Get(a.sigHeader)
			i := len(v) - 8
			// A digit: hex decoding ignores case, so 'a' → 'A' would not
			// change a hex signature.
			c := byte('0')
			if v[i] == '0' {
				c = '1'
			}
			d.header.Set(a.sigHeader, v[:i]+string(c)+v[i+1:])
		}), status: 401, contains: "signature"},
		{name: "missing signature", applies: all, build: with(func(d *delivery, a adversary) { d.header.Del(a.sigHeader) }), status: 401, contains: "missing signature"},
		{name: "truncated signature", applies: all, build: with(func(d *delivery, a adversary) {
			v := d.header.Get(a.sigHeader)
			d.header.Set(a.sigHeader, v[:len(v)/2])
		}), status: 401, contains: "signature"},
		{name: "another tenant's secret", applies: all, build: func(t *testing.T, a adversary) delivery {
			return signed(t, a, "acme", globex.Providers[a.provider], nil, now)
		}, status: 401, contains: "signature"},
		{name: "stale timestamp", applies: func(a adversary) bool { return a.timestamped }, build: func(t *testing.T, a adversary) delivery {
			return signed(t, a, "acme", acme.Providers[a.provider], nil, now.Add(-time.Hour))
		}, status: 401, contains: "timestamp"},
		{name: "future timestamp", applies: func(a adversary) bool { return a.timestamped }, build: func(t *testing.T, a adversary) delivery {
			return signed(t, a, "acme", acme.Providers[a.provider], nil, now.Add(time.Hour))
		}, status: 401, contains: "timestamp"},
		{name: "replay with a fresh id header", applies: all, before: valid, build: with(func(d *delivery, a adversary) {
			for _, h := range a.unsigned {
				d.header.Set(h, "replayed-"+h)
			}
		}), status: 200, contains: ""},
		{name: "same id, another body", applies: func(a adversary) bool { return a.provider == "stripe" }, before: valid, build: func(t *testing.T, a adversary) delivery {
			body := bytes.Replace(deliveries[a.provider].Body, []byte(`"email"`), []byte(`"email_changed"`), 1)
			return signed(t, a, "acme", acme.Providers[a.provider], body, now)
		}, status: 409, contains: "id reused with a different payload"},
		{name: "oversize", applies: all, build: func(t *testing.T, a adversary) delivery {
			return signed(t, a, "acme", acme.Providers[a.provider], append(bytes.Clone(deliveries[a.provider].Body), bytes.Repeat([]byte(" "), queue.MaxMessageBytes+1)...), now)
		}, status: 413, contains: "too large"},
		{name: "malformed JSON", applies: json, build: func(t *testing.T, a adversary) delivery {
			return signed(t, a, "acme", acme.Providers[a.provider], []byte(`{"id":`), now)
		}, status: 400, contains: "malformed"},
		{name: "non-object JSON", applies: json, build: func(t *testing.T, a adversary) delivery {
			return signed(t, a, "acme", acme.Providers[a.provider], []byte(`"just a string"`), now)
		}, status: 400, contains: "malformed"},
		{name: "non-UTF-8 body", applies: json, build: func(t *testing.T, a adversary) delivery {
			return signed(t, a, "acme", acme.Providers[a.provider], []byte("\xff\xfe{}"), now)
		}, status: 400, contains: "malformed"},
		{name: "form body not URL-encoded", applies: func(a adversary) bool { return a.provider == "twilio" }, build: with(func(d *delivery, a adversary) {
			d.body = []byte("Body=%zz")
		}), status: 401, contains: "not URL-encoded"},
		{name: "traversal tenant id", applies: all, build: with(func(d *delivery, a adversary) { d.path = "/webhooks/../" + a.provider }), status: 400, contains: "invalid tenant id"},
		{name: "encoded traversal", applies: all, build: with(func(d *delivery, a adversary) { d.path = "/webhooks/..%2Facme/" + a.provider }), status: 404, contains: "Not Found"},
		{name: "odd tenant id", applies: all, build: with(func(d *delivery, a adversary) { d.path = "/webhooks/ACME%00/" + a.provider }), status: 400, contains: "invalid tenant id"},
		{name: "unknown tenant", applies: all, build: with(func(d *delivery, a adversary) { d.path = "/webhooks/nobody/" + a.provider }), status: 404, contains: "unknown tenant or provider"},
		{name: "unknown provider", applies: all, build: with(func(d *delivery, a adversary) { d.path = "/webhooks/acme/paypal" }), status: 404, contains: "unknown tenant or provider"},
		{name: "wrong method", applies: all, build: with(func(d *delivery, a adversary) { d.method = "PUT" }), status: 404, contains: "Not Found"},
		{name: "trailing slash", applies: all, build: with(func(d *delivery, a adversary) { d.path = strings.Replace(d.path, a.provider, a.provider+"/", 1) }), status: 404, contains: "Not Found"},
		{name: "missing required header", applies: func(a adversary) bool { return a.required != "" }, build: with(func(d *delivery, a adversary) { d.header.Del(a.required) }), status: 400, contains: "required"},
	}
	for _, a := range adversaries {
		for _, r := range rows {
			if !r.applies(a) {
				continue
			}
			t.Run(a.provider+"/"+r.name, func(t *testing.T) {
				if r.before != nil {
					if code, msg := send(t, r.before(t, a)); code != 200 {
						t.Fatalf("the captured delivery itself = %d %s, want 200", code, msg)
					}
				}
				d := r.build(t, a)
				counter.Take()
				code, msg := send(t, d)
				contains := r.contains
				if r.name == "missing required header" {
					contains = a.required
				}
				if code != r.status || !strings.Contains(msg, contains) {
					t.Errorf("status %d %q, want %d containing %q", code, msg, r.status, contains)
				}
				got := counter.Take()
				// A reused id is found by a read (GetItem): no write.
				writes := got["SQS.SendMessage"] + got["SQS.SendMessageBatch"] + got["DynamoDB.PutItem"] + got["DynamoDB.UpdateItem"] + got["DynamoDB.DeleteItem"] + got["DynamoDB.BatchWriteItem"]
				if writes != 0 {
					t.Errorf("AWS requests %v: want no write to DynamoDB or SQS", got)
				}
			})
		}
	}

	out := logs.String()
	if out == "" {
		t.Fatal("no log lines captured")
	}
	leaks := append([]string{}, secrets...)
	for _, s := range signatures {
		if len(s) > 24 {
			leaks = append(leaks, s[len(s)-20:])
		}
	}
	// Raw bodies: no 72-byte window of one (event ids, which are logged, are
	// shorter).
	for _, s := range deliveries {
		for i := 0; i+72 <= len(s.Body); i += 8 {
			leaks = append(leaks, string(s.Body[i:i+72]))
		}
	}
	for _, leak := range leaks {
		if leak != "" && strings.Contains(out, leak) {
			t.Errorf("logs contain %q", leak)
		}
	}
}
