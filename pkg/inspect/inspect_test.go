package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/provider/github"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/provider/stripe"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/webhook"
	"github.com/hookpack/hookpack/pkg/worker"
)

// The demo tenant's secrets in events/tenants.json, and a marker in every
// body: inspect must never print any of them.
const (
	githubSecret = "demo-github-secret"
	stripeSecret = "whsec_demo_stripe"
	bodySecret   = "BODY-ONLY-MARKER"
)

// target is the demo tenant's endpoint: it answers 400 to bodies with
// "mode":"dead", holds those with "mode":"hold" until released, and takes
// the rest.
type target struct {
	mu       sync.Mutex
	received map[string]int // delivery id → forwards received
	held     chan struct{}  // closed when a held forward arrives
	release  chan struct{}
	once     sync.Once
}

func (tg *target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var ev struct {
		ID   string `json:"ref"`
		Mode string `json:"mode"`
	}
	_ = json.Unmarshal(b, &ev)
	tg.mu.Lock()
	tg.received[ev.ID]++
	tg.mu.Unlock()
	switch ev.Mode {
	case "dead":
		http.Error(w, "we cannot take this one", http.StatusBadRequest)
	case "hold":
		tg.once.Do(func() { close(tg.held) })
		<-tg.release
	}
}

func (tg *target) count(id string) int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.received[id]
}

// TestInspectOnTheLocalStack runs make run's pipeline (real ingest and
// worker handlers, moto and DynamoDB Local) and asks inspect about an
// event in each state: done (and delivered twice: a duplicate),
// dead-lettered, in flight, queued behind it, and one never sent.
func TestInspectOnTheLocalStack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tg := &target{received: map[string]int{}, held: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(tg)
	defer srv.Close()
	defer close(tg.release) // before srv.Close: a held forward returns
	tenants, err := devstack.RetargetTenantsFile(filepath.Join(awstest.ModuleRoot(), "events", "tenants.json"), t.TempDir(), strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	s, in := localStack(ctx, t, "in", tenants)

	var signatures []string
	// post sends a Stripe event (a signed id: the id is in the key) or, with
	// github, a GitHub delivery (its id is an unsigned header, which the key
	// does not hold).
	post := func(provider, id, conv, mode string) string {
		t.Helper()
		var body, sig string
		var code int
		var resp string
		if provider == "github" {
			body = fmt.Sprintf(`{"action":"opened","ref":%q,"mode":%q,"note":%q,"issue":{"number":1},"repository":{"full_name":%q}}`, id, mode, bodySecret, conv)
			code, resp, sig = postGitHub(t, s.URL()+"/webhooks/demo/github", body, id)
		} else {
			body = fmt.Sprintf(`{"id":%q,"object":"event","type":"customer.updated","ref":%q,"mode":%q,"data":{"object":{"id":%q,"note":%q}}}`, id, id, mode, conv, bodySecret)
			code, resp, sig = postStripe(t, s.URL()+"/webhooks/demo/stripe", body)
		}
		if code != 200 {
			t.Fatalf("POST %s = %d %s", id, code, resp)
		}
		signatures = append(signatures, sig)
		return resp
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	summary := func() inspect.Summary {
		t.Helper()
		sum, err := in.Summarize(ctx, "demo")
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	idle := func() bool { q := summary().Queue; return q.Visible+q.InFlight+q.Delayed == 0 }

	// Done, and delivered twice: the repeat is a duplicate.
	for _, want := range []string{`"accepted"`, `"duplicate"`} {
		if resp := post("stripe", "evt_done", "cus_done", "ok"); !strings.Contains(resp, want) {
			t.Fatalf("POST evt_done = %s, want %s", resp, want)
		}
	}
	waitFor("evt_done to be forwarded", func() bool { return tg.count("evt_done") == 1 && idle() })
	// Done, sent by a provider whose id the signature does not cover.
	post("github", "delivery-done", "octo/done", "ok")
	waitFor("delivery-done to be forwarded", func() bool { return tg.count("delivery-done") == 1 && idle() })
	// Dead-lettered: the target refuses it for good.
	post("github", "delivery-dead", "octo/dead", "dead")
	waitFor("evt-dead to be dead-lettered", func() bool { return summary().Queue.DeadLetters == 1 && idle() })

	type check struct {
		name, event string
		scan        bool
		state       inspect.State
		claim       string // claim status
		forward     ledger.Status
		reason      string // in the dead letter's reason
		note        string // in a note
		deliveries  int    // ingest log lines shown
		history     string // in the history's text
	}
	run := func(tt check) {
		t.Helper()
		js, err := in.Inspect(ctx, inspect.Query{Tenant: "demo", Event: tt.event, Scan: tt.scan})
		if err != nil || len(js) != 1 {
			t.Fatalf("Inspect(%s) = %d journeys, %v; want one", tt.event, len(js), err)
		}
		j := js[0]
		var out bytes.Buffer
		if err := inspect.WriteJourney(&out, j); err != nil {
			t.Fatal(err)
		}
		jsonOut, _ := json.Marshal(j)
		t.Logf("%s: inspect -tenant demo %s\n%s", tt.name, tt.event, out.String())
		if j.State != tt.state {
			t.Errorf("%s: state = %s (%s), want %s", tt.name, j.State, j.Why, tt.state)
		}
		if j.Claim == nil || string(j.Claim.Status) != tt.claim {
			t.Errorf("%s: claim = %+v, want %s", tt.name, j.Claim, tt.claim)
		}
		var fwd ledger.Status
		for _, e := range j.Effects {
			if e.Name == worker.ForwardEffect {
				fwd = e.Status
			}
		}
		if fwd != tt.forward {
			t.Errorf("%s: forward effect %q, want %q", tt.name, fwd, tt.forward)
		}
		if tt.reason != "" && (j.DeadLetter == nil || !strings.Contains(j.DeadLetter.Reason, tt.reason) || j.DeadLetter.Attempts == "") {
			t.Errorf("%s: dead letter = %+v, want reason with %q and attempts", tt.name, j.DeadLetter, tt.reason)
		}
		if len(j.Deliveries) != tt.deliveries {
			t.Errorf("%s: %d ingest log lines %+v, want %d", tt.name, len(j.Deliveries), j.Deliveries, tt.deliveries)
		}
		var steps []string
		for _, st := range j.History {
			steps = append(steps, st.What)
		}
		if len(j.Deliveries) > 0 && (len(steps) == 0 || !strings.HasPrefix(steps[0], "received: accepted")) {
			t.Errorf("%s: history %q does not start with the delivery the ingest accepted", tt.name, steps)
		}
		if !strings.Contains(strings.Join(steps, "\n"), tt.history) {
			t.Errorf("%s: history %q lacks %q", tt.name, steps, tt.history)
		}
		if tt.note != "" && !strings.Contains(strings.Join(j.Notes, "\n"), tt.note) {
			t.Errorf("%s: notes %q lack %q", tt.name, j.Notes, tt.note)
		}
		for _, never := range append([]string{githubSecret, stripeSecret, bodySecret}, signatures...) {
			if bytes.Contains(out.Bytes(), []byte(never)) || bytes.Contains(jsonOut, []byte(never)) {
				t.Errorf("%s: output holds %q (a secret, a signature or body content)", tt.name, never)
			}
		}
	}
	doneKey := ledger.Key{Tenant: "demo", Event: "demo#stripe#evt_done", Effect: worker.ForwardEffect}
	for _, tt := range []check{
		{name: "done, delivered twice (the repeat was a duplicate)", event: "evt_done", state: inspect.StateDone, claim: "COMPLETED", forward: ledger.StatusInProgress, note: "answered duplicate", deliveries: 2, history: "attempt done: message"},
		{name: "done, by X-GitHub-Delivery (only the ingest's log line pairs it with the key)", event: "delivery-done", state: inspect.StateDone, claim: "COMPLETED", forward: ledger.StatusInProgress, deliveries: 1},
		{name: "done, by idempotency key (the log is searched for its event id)", event: "demo#stripe#evt_done", state: inspect.StateDone, claim: "COMPLETED", forward: ledger.StatusInProgress, deliveries: 2},
		{name: "done, by the Idempotency-Key the receiver saw (a Scan)", event: doneKey.IdempotencyKey(), scan: true, state: inspect.StateDone, claim: "COMPLETED", forward: ledger.StatusInProgress},
		{name: "dead-lettered, by X-GitHub-Delivery", event: "delivery-dead", state: inspect.StateDeadLettered, claim: "COMPLETED", forward: ledger.StatusDead, reason: "400", note: "scripts/replay", deliveries: 1, history: "dead-lettered: message"},
	} {
		run(tt)
	}
	if n := tg.count("evt_done"); n != 1 {
		t.Errorf("evt_done forwarded %d times, want once (its repeat was a duplicate)", n)
	}
	js, err := in.Inspect(ctx, inspect.Query{Tenant: "demo", Event: "delivery-dead"})
	if err != nil {
		t.Fatal(err)
	}
	run(check{name: "dead-lettered, by webhook-id", event: js[0].WebhookID, state: inspect.StateDeadLettered, claim: "COMPLETED", forward: ledger.StatusDead, reason: "400"})

	// Replayed, and dead-lettered again (the target still refuses it): the
	// newest dead letter is the replay's, and the history tells both.
	first := js[0].DeadLetter.OriginalMessageID
	firstDeadLetter := js[0].DeadLetter.MessageID
	client := sqs.NewFromConfig(s.AWS)
	dlqURL, err := worker.DLQURL(js[0].Queue.QueueURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.New(client, queue.NewSQS(client), replay.Options{}).Redrive(ctx, dlqURL, js[0].Queue.QueueURL, replay.Filter{Event: "delivery-dead"}, false); err != nil {
		t.Fatal(err)
	}
	waitFor("delivery-dead to be dead-lettered again", func() bool {
		js, err = in.Inspect(ctx, inspect.Query{Tenant: "demo", Event: "delivery-dead"})
		return err == nil && js[0].DeadLetter != nil && js[0].DeadLetter.OriginalMessageID != first && idle()
	})
	run(check{name: "replayed, dead-lettered again", event: "delivery-dead", state: inspect.StateDeadLettered, claim: "COMPLETED", forward: ledger.StatusDead, reason: "400",
		deliveries: 1, history: "replayed by scripts/replay: dead letter " + firstDeadLetter + " came back as message " + js[0].DeadLetter.OriginalMessageID})
	if len(js[0].Messages) != 2 || !js[0].Messages[1].Replay {
		t.Errorf("replayed, dead-lettered again: messages %+v, want the first and its replay", js[0].Messages)
	}

	// In flight: the target holds the forward; a later event of the same
	// conversation waits behind it in the queue.
	post("stripe", "evt_hold", "cus_held", "hold")
	select {
	case <-tg.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the held forward never arrived")
	}
	post("stripe", "evt_queued", "cus_held", "ok")
	run(check{name: "in flight", event: "evt_hold", state: inspect.StateInFlight, claim: "COMPLETED", forward: ledger.StatusInProgress, deliveries: 1})
	run(check{name: "accepted, queued behind it", event: "evt_queued", state: inspect.StateQueued, claim: "COMPLETED", note: "SQS has no peek", deliveries: 1})

	sum := summary()
	var out bytes.Buffer
	if err := inspect.WriteSummary(&out, sum); err != nil {
		t.Fatal(err)
	}
	t.Logf("inspect -tenant demo -summary\n%s", out.String())
	if sum.Queue.DeadLetters != 1 || len(sum.Reasons) != 1 || !strings.Contains(sum.Reasons[0].Reason, "400") ||
		sum.OldestDeadLetter == nil || sum.DeadLetterExpires == nil || sum.Queue.Visible+sum.Queue.InFlight < 1 {
		t.Errorf("Summarize() = %+v, want 1 dead letter (400) with its age and expiry, and the held conversation queued", sum)
	}

	// Unknown: never sent; and a hash that matches nothing.
	for _, q := range []inspect.Query{
		{Tenant: "demo", Event: "evt_never"},
		{Tenant: "demo", Event: forward.MessageID("demo#stripe#evt_never"), Scan: true},
		{Tenant: "demo", Event: doneKey.IdempotencyKey()}, // without -scan it cannot be resolved
	} {
		_, err := in.Inspect(ctx, q)
		t.Logf("inspect -tenant demo %s: %v", q.Event, err)
		if !errors.Is(err, inspect.ErrUnknownEvent) {
			t.Errorf("Inspect(%s, scan %v) = %v, want ErrUnknownEvent", q.Event, q.Scan, err)
		}
	}
	if _, err := in.Inspect(ctx, inspect.Query{Tenant: "demo", Event: "acme#stripe#evt_done"}); !errors.Is(err, inspect.ErrMalformed) {
		t.Errorf("Inspect(another tenant's key) = %v, want ErrMalformed", err)
	}
	if _, err := in.Summarize(ctx, "nobody"); !errors.Is(err, inspect.ErrUnknownTenant) {
		t.Errorf("Summarize(nobody) = %v, want ErrUnknownTenant", err)
	}
}

// localStack serves make run's pipeline for the tenants file (its stack
// name prefixed with prefix) until ctx ends, and returns it with an
// inspector of its demo tenant that reads its log file.
func localStack(ctx context.Context, t *testing.T, prefix, tenants string) (*devstack.Stack, *inspect.Inspector) {
	t.Helper()
	name := awstest.Name(t)
	s, err := devstack.Start(ctx, devstack.Options{
		Name: prefix + name[len(name)-9:], TenantsFile: tenants, Addr: "127.0.0.1:0", TargetAddr: "127.0.0.1:0",
		Endpoint: awstest.Moto(t), DynamoDBEndpoint: awstest.DynamoDBLocal(t), LogFile: filepath.Join(t.TempDir(), "functions.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	go func() { _ = s.Serve(ctx) }()
	d, err := devstack.Inspected(ctx, s.AWS, s.Name, "demo")
	if err != nil {
		t.Fatal(err)
	}
	d.IngestLogFile = s.LogFile
	return s, inspect.NewAWS(s.AWS, d, false)
}

// postGitHub posts body as a GitHub "issues" delivery signed with the demo
// tenant's secret and returns the status, the response and the signature.
func postGitHub(t *testing.T, url, body, delivery string) (int, string, string) {
	t.Helper()
	req := providertest.Request(map[string]string{"Content-Type": "application/json", "X-GitHub-Event": "issues", "X-GitHub-Delivery": delivery}, body)
	code, resp := providertest.Post(t, url, github.Provider{}, req, webhook.Config{Secrets: []string{githubSecret}})
	return code, resp, strings.TrimPrefix(req.Header.Get("X-Hub-Signature-256"), "sha256=")
}

// postStripe posts body as a Stripe event signed with the demo tenant's
// secret and returns the status, the response and the signature.
func postStripe(t *testing.T, url, body string) (int, string, string) {
	t.Helper()
	req := providertest.Request(map[string]string{"Content-Type": "application/json"}, body)
	code, resp := providertest.Post(t, url, stripe.Provider{}, req, webhook.Config{Secrets: []string{stripeSecret}})
	_, sig, _ := strings.Cut(req.Header.Get("Stripe-Signature"), "v1=")
	return code, resp, sig
}
