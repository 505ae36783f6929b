package receiver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/receiver"
	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
)

// forwardOf is one forward the pipeline delivered for a sample.
type forwardOf struct {
	sample string // provider/name
	receiver.Delivery
}

// TestReceivers sends every provider's sample deliveries (events/samples,
// plus the shapes below that no sample has: form-bodied status callbacks and
// interactivity, GitHub's form content type, batches) through `make run`'s
// pipeline — the real ingest handler, queues and worker on the emulators —
// to a recording target, then checks each forward as a tenant's endpoint
// does: with the default verify call of the official Go library and of the
// npm standardwebhooks and svix packages, and with the receivers of
// docs/receiving.md.
func TestReceivers(t *testing.T) {
	root := awstest.ModuleRoot()
	modules, err := receiver.NodeModules(root)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v", err)
		}
		t.Skipf("%v (set CI=true to make this fatal)", err)
	}
	secret, got := pipelineForwards(t, root)

	table := map[string][]string{} // sample → result per forward
	var failed bool
	note := func(sample, lib string, err error) {
		res := "pass"
		if err != nil {
			res, failed = "FAIL", true
			t.Errorf("%s: %s verify: %v", sample, lib, err)
		}
		table[sample] = append(table[sample], lib+" "+res)
	}
	t.Run("official libraries", func(t *testing.T) {
		ds := make([]receiver.Delivery, len(got))
		for i, f := range got {
			ds[i] = f.Delivery
		}
		node, err := receiver.VerifyNode(context.Background(), modules, t.TempDir(), secret, ds)
		if err != nil {
			t.Fatal(err)
		}
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range got {
			note(f.sample, "go", wh.Verify(f.Body, f.Header))
			note(f.sample, "standardwebhooks", errText(node[i].StandardWebhooks))
			note(f.sample, "svix", errText(node[i].Svix))
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range table {
				if !yield(k) {
					return
				}
			}
		})
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "\n%-42s %s", k, strings.Join(table[k], ", "))
		}
		t.Logf("verification per forward:%s", b.String())
		if failed {
			t.Error("some forwards do not verify with an official library's default call (see above)")
		}
	})
	t.Run("docs/receiving.md", func(t *testing.T) { testReceivingDoc(t, root, modules, secret, got) })
}

func errText(s string) error {
	if s == "" {
		return nil
	}
	return fmt.Errorf("%s", s)
}

// pipelineForwards runs `make run`'s pipeline with the demo tenant's target
// moved to a Recorder, sends every sample delivery, one after another, and
// returns the demo tenant's outbound secret and the forwards of each sample.
// It fails the test when a sample's forwards are not exactly its events,
// each carried as forward.Payload says, with the headers docs/receiving.md
// lists.
func pipelineForwards(t *testing.T, root string) (string, []forwardOf) {
	t.Helper()
	rec := receiver.NewRecorder()
	target := httptest.NewServer(rec)
	t.Cleanup(target.Close)
	tenantsFile, err := devstack.RetargetTenantsFile(filepath.Join(root, "events", "tenants.json"), t.TempDir(), strings.TrimPrefix(target.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stack, err := devstack.Start(ctx, devstack.Options{
		Name:        fmt.Sprintf("rcv%d", time.Now().UnixNano()%1_000_000_000),
		TenantsFile: tenantsFile,
		Addr:        "127.0.0.1:0",
		TargetAddr:  "127.0.0.1:0",
		Endpoint:    awstest.Moto(t), DynamoDBEndpoint: awstest.DynamoDBLocal(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Close)
	go func() { _ = stack.Serve(ctx) }()

	demo := stack.Tenants.Tenants["demo"]
	all, err := providertest.LoadSamples(providertest.SamplesDir())
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, extraSamples()...)
	reg := provider.Registry()
	evs, err := samples.Generate(all, samples.Options{Tenant: "demo", Providers: demo.Providers, Registry: reg, Now: time.Now(), BaseURL: stack.URL()})
	if err != nil {
		t.Fatal(err)
	}
	var out []forwardOf
	providers := map[string]bool{}
	for _, ev := range evs {
		if ev.Reply != nil {
			continue // a handshake: answered, nothing forwarded
		}
		name := ev.Sample.Provider + "/" + ev.Sample.Name
		p, _ := reg.Lookup(ev.Sample.Provider)
		events, err := p.Events(ev.Request, demo.Providers[ev.Sample.Provider])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		before := len(out)
		post(t, ev)
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		got, err := rec.Wait(wctx, before+len(events))
		wcancel()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) > before+len(events) {
			t.Fatalf("%s: %d forwards, want %d (one per event)", name, len(got)-before, len(events))
		}
		var want []string
		for _, e := range events {
			body, _, _ := forward.Payload(e.Body, e.Headers["content-type"])
			want = append(want, string(body))
		}
		var gotBodies []string
		for _, d := range got[before:] {
			gotBodies = append(gotBodies, string(d.Body))
			out = append(out, forwardOf{sample: fmt.Sprintf("%s (%d of %d)", name, len(out)-before+1, len(events)), Delivery: d})
			checkHeaders(t, name, d, ev.Sample.Provider)
		}
		slices.Sort(want)
		slices.Sort(gotBodies)
		if !slices.Equal(want, gotBodies) {
			t.Errorf("%s: forwarded bodies\n%q\nwant one per event, as forward.Payload carries it:\n%q", name, gotBodies, want)
		}
		providers[ev.Sample.Provider] = true
	}
	dirs, err := os.ReadDir(filepath.Join(root, "events", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && !providers[d.Name()] {
			t.Errorf("no forward of provider %s's samples", d.Name())
		}
	}
	return demo.Outbound.Secrets[0], out
}

// post sends a generated sample delivery to the stack, as `make send` does.
func post(t *testing.T, ev samples.Event) {
	t.Helper()
	r := ev.Request
	resp, body := providertest.Send(t, r.Method, r.URL, r.Header, r.Body)
	// A sender's own synchronous answer (Discord's deferred response)
	// carries the outcome in X-Hookpack-Status; every other answer in its body.
	answer := struct{ Status string }{resp.Header.Get("X-Hookpack-Status")}
	if answer.Status == "" {
		_ = json.Unmarshal(body, &answer)
	}
	if resp.StatusCode != http.StatusOK || answer.Status != "accepted" {
		t.Fatalf("POST %s/%s = %d %q, want 200 accepted", ev.Sample.Provider, ev.Sample.Name, resp.StatusCode, answer.Status)
	}
}

// checkHeaders checks the headers docs/receiving.md promises.
func checkHeaders(t *testing.T, name string, d receiver.Delivery, prov string) {
	t.Helper()
	h := d.Header
	for _, k := range []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature", "Idempotency-Key", "Hookpack-Tenant", "Hookpack-Provider", "Hookpack-Event-Id", "Content-Type"} {
		if h.Get(k) == "" {
			t.Errorf("%s: forward lacks %s", name, k)
		}
	}
	if h.Get("Hookpack-Tenant") != "demo" || h.Get("Hookpack-Provider") != prov {
		t.Errorf("%s: Hookpack-Tenant %q, Hookpack-Provider %q; want demo, %s", name, h.Get("Hookpack-Tenant"), h.Get("Hookpack-Provider"), prov)
	}
	original := h.Get(forward.HeaderOriginalContentType)
	if wrapped := wrappedBody(d.Body) && h.Get("Content-Type") == "application/json"; wrapped != (original != "") {
		t.Errorf("%s: %s %q, body wrapped %v", name, forward.HeaderOriginalContentType, original, wrapped)
	}
}

// wrappedBody reports whether b is a forward.Wrapped document.
func wrappedBody(b []byte) bool {
	var doc map[string]json.RawMessage
	if json.Unmarshal(b, &doc) != nil {
		return false
	}
	_, raw := doc["raw"]
	_, ct := doc["contentType"]
	return raw && ct && len(doc) <= 3
}

// extraSamples are delivery shapes the sample folders lack, signed by
// samples.Generate like the others.
func extraSamples() []providertest.Sample {
	const host = "https://abc123.execute-api.us-east-1.amazonaws.com/webhooks/demo/"
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	with := func(h map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	interaction := `{"type":"block_actions","team":{"id":"T1DC2JH3J"},"user":{"id":"U2CERLKJA"},"channel":{"id":"C123"},"container":{"type":"message","message_ts":"1700000000.000100","channel_id":"C123"},"actions":[{"action_id":"approve","value":"yes"}]}`
	ping := `{"zen":"Keep it logically awesome.","hook_id":1,"repository":{"full_name":"octo/hello"}}`
	return []providertest.Sample{
		{Provider: "twilio", Name: "status-callback (extra)", Method: http.MethodPost, URL: host + "twilio", Headers: with(form, "I-Twilio-Idempotency-Token", "b8f3ab6b-1f5c-4bd8-a0a5-9f0e1c2d3e4f"),
			Body: []byte("AccountSid=ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX&ApiVersion=2010-04-01&From=%2B15557654321&MessageSid=SM2f0e8ae6ade43cb3c0ce4525424e404f&MessageStatus=delivered&SmsSid=SM2f0e8ae6ade43cb3c0ce4525424e404f&SmsStatus=delivered&To=%2B15551234567")},
		{Provider: "twilio", Name: "event-streams-batch (extra)", Method: http.MethodPost, URL: host + "twilio", Query: map[string]string{"bodySHA256": "0"},
			Headers: map[string]string{"Content-Type": "application/json"},
			Body: []byte(`[{"specversion":"1.0","type":"com.twilio.messaging.message.delivered","source":"/2010-04-01/Accounts/AC1/Messages/SM1.json","id":"EZ1","data":{"messageSid":"SM1","from":"+15557654321","to":"+15551234567"}},` +
				`{"specversion":"1.0","type":"com.twilio.messaging.message.read","source":"/2010-04-01/Accounts/AC1/Messages/SM1.json","id":"EZ2","data":{"messageSid":"SM1","from":"+15557654321","to":"+15551234567"}}]`)},
		{Provider: "slack", Name: "interactivity (extra)", Method: http.MethodPost, URL: host + "slack", Headers: form,
			Body: []byte("payload=" + url.QueryEscape(interaction))},
		{Provider: "github", Name: "form-ping (extra)", Method: http.MethodPost, URL: host + "github",
			Headers: with(form, "X-GitHub-Event", "ping", "X-GitHub-Delivery", "5d0c4e2a-0000-4000-8000-000000000001"),
			Body:    []byte("payload=" + url.QueryEscape(ping))},
		{Provider: "whatsapp", Name: "batch (extra)", Method: http.MethodPost, URL: host + "whatsapp", Headers: map[string]string{"Content-Type": "application/json"},
			Body: []byte(`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},` +
				`"contacts":[{"profile":{"name":"Ann"},"wa_id":"16505550001"},{"profile":{"name":"Bob"},"wa_id":"16505550002"}],` +
				`"messages":[{"from":"16505550001","id":"wamid.A1","timestamp":"1749416383","type":"text","text":{"body":"hi"}},{"from":"16505550002","id":"wamid.B1","timestamp":"1749416384","type":"text","text":{"body":"yo"}}],` +
				`"statuses":[{"id":"wamid.OUT1","status":"read","timestamp":"1749416385","recipient_id":"16505550001"}]}}]}]}`)},
	}
}
