package worker_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/worker"
)

const billingAndSupport = `{"destinations": [
	{"name": "billing", "url": "https://billing.example/hooks", "secrets": ["whsec_c2VjcmV0"]},
	{"name": "support", "url": "https://support.example/hooks", "secrets": ["whsec_c2VjcmV0"]}]}`

// readCounting counts the reads of the destinations' states.
type readCounting struct {
	*destination.Memory
	mu    sync.Mutex
	reads int
}

func (r *readCounting) States(ctx context.Context, id string) (destination.States, error) {
	r.mu.Lock()
	r.reads++
	r.mu.Unlock()
	return r.Memory.States(ctx, id)
}

// stateOf returns acme's destination name's state in store.
func stateOf(t *testing.T, store *readCounting, name string) destination.State {
	t.Helper()
	s, err := store.Memory.States(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	return s[name]
}

func pausedFixture(t *testing.T, mod func(*worker.Config)) (*fixture, *destPoster, *readCounting) {
	t.Helper()
	store := &readCounting{Memory: destination.NewMemory()}
	f := newFixture(t, func(c *worker.Config) {
		c.MaxAttempts = 3
		c.Destinations = store
		if mod != nil {
			mod(c)
		}
	})
	p := &destPoster{now: f.clock.Now, errs: map[string]error{}}
	f.reg.Handle(worker.Any, worker.Any, worker.Forward(fakeOutbound{out: outboundOf(t, billingAndSupport)}, p))
	return f, p, store
}

// A paused destination's messages wait, for days, without an attempt or a
// dead letter, coming back at the poll interval; on resume they are
// delivered in order. The tenant's states are read once per invocation.
// MaxAttempts is the template's default, whose maxReceiveCount (280) the
// waits stay well under.
func TestPausedDestinationWaits(t *testing.T) {
	ctx := context.Background()
	f, p, store := pausedFixture(t, func(c *worker.Config) { c.MaxAttempts = 26 })
	pausedAt := f.clock.Now()
	if _, err := store.Pause(ctx, "acme", "billing", "maintenance", pausedAt); err != nil {
		t.Fatal(err)
	}
	e1, e2 := stripeEvent("e1", "c1", "invoice.paid", "usd"), stripeEvent("e2", "c1", "invoice.paid", "usd")
	resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e1, 1), rec(t, e2, 1)}})
	if got := failed(resp); !slices.Equal(got, []string{"m-e1", "m-e2"}) {
		t.Fatalf("failures %v, want e1 waiting for billing and e2 behind it", got)
	}
	if got := p.to("billing"); len(got) != 0 {
		t.Errorf("billing got %v while paused, want nothing", got)
	}
	if got := outcomes(t, f.logs)["m-e1"]; got != "paused" {
		t.Errorf("e1's outcome = %q, want paused\n%s", got, f.logs)
	}
	if v := f.sqs.visibility["rh-e1"]; v != 60 {
		t.Errorf("e1's visibility = %ds, want the 60 s poll", v)
	}
	if store.reads != 1 {
		t.Errorf("%d reads of the destinations' states for one batch, want 1", store.reads)
	}
	if !strings.Contains(f.logs.String(), `"outcome":"paused","_aws"`) && !strings.Contains(f.logs.String(), `"msg":"batch","outcome":"paused"`) {
		t.Errorf("no EMF batch line for the outcome paused:\n%s", f.logs)
	}
	// Three days paused, more receives than MaxAttempts: still waiting,
	// no attempt counted.
	receives := 1
	for f.clock.Now().Sub(pausedAt) < 72*time.Hour {
		f.clock.Advance(time.Duration(f.sqs.visibility["rh-e1"]) * time.Second)
		receives++
		resp, _ = f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e1, receives), rec(t, e2, receives)}})
		if len(resp.BatchItemFailures) != 2 {
			t.Fatalf("receive %d: failures %v, want both still waiting", receives, failed(resp))
		}
	}
	if len(f.sqs.sent) != 0 {
		t.Errorf("%d dead letters after 3 days paused, want none", len(f.sqs.sent))
	}
	if receives > 100 {
		t.Errorf("%d receives over 3 days paused, want at most 100 (the queue's maxReceiveCount is 280)", receives)
	}
	if v := time.Duration(f.sqs.visibility["rh-e1"]) * time.Second; v != destination.Poll(f.clock.Now().Sub(pausedAt)) {
		t.Errorf("visibility after 3 days paused = %s, want %s", v, destination.Poll(f.clock.Now().Sub(pausedAt)))
	}
	if n, _ := f.ledger.FailedAttempt(ctx, "m-e1", 999); n != 1 {
		t.Errorf("e1's attempts before this count = %d, want 0: waiting is no attempt", n-1)
	}
	if got := p.to("support"); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("support got %v, want e1 once (its effect done, never repeated)", got)
	}
	// Resumed: both are delivered to billing, in order, once.
	if _, err := store.Resume(ctx, "acme", "billing"); err != nil {
		t.Fatal(err)
	}
	resp, _ = f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e1, receives+1), rec(t, e2, receives+1)}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("after resume: failures %v\n%s", failed(resp), f.logs)
	}
	if got := p.to("billing"); !slices.Equal(got, []string{"e1", "e2"}) {
		t.Errorf("billing got %v after resume, want e1 then e2", got)
	}
	if got := p.to("support"); !slices.Equal(got, []string{"e1", "e2"}) {
		t.Errorf("support got %v, want e1 and e2 once each", got)
	}
}

// A destination failing without a success for the auto-pause time is
// paused, by the worker, with the failure as its reason; not before, and
// a success in between starts the count again; 429s are no failures.
func TestAutoPause(t *testing.T) {
	ctx := context.Background()
	f, p, store := pausedFixture(t, func(c *worker.Config) { c.MaxAttempts = 0; c.AutoPause = time.Hour })
	state := func() destination.State { return stateOf(t, store, "billing") }
	start := f.clock.Now()
	p.errs["billing"] = forward.Classify(503, nil, nil, start)
	e1 := stripeEvent("e1", "c1", "invoice.paid", "usd")
	for i, at := range []time.Duration{0, 10 * time.Minute, 30 * time.Minute, 59 * time.Minute} {
		f.clock.Advance(at - f.clock.Now().Sub(start))
		f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e1, i+1)}})
	}
	if s := state(); s.IsPaused() || !s.Failing.Since.Equal(start) || !strings.Contains(s.Failing.Reason, "503") {
		t.Fatalf("after failing for less than the auto-pause time: %+v, want failing since the first failure, not paused", s)
	}
	f.clock.Advance(time.Hour - f.clock.Now().Sub(start))
	f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e1, 20)}})
	s := state()
	if s.Paused.By != destination.Auto || !strings.Contains(s.Paused.Reason, "503") {
		t.Fatalf("after failing for the auto-pause time: %+v, want paused by auto naming the 503", s)
	}
	// Paused: the next receive posts nothing and waits.
	posts := len(p.to("billing"))
	f.clock.Advance(time.Minute)
	f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e1, 21)}})
	if len(p.to("billing")) != posts || outcomes(t, f.logs)["m-e1"] != "paused" {
		t.Errorf("auto-paused billing got %d posts more, outcome %q; want none, paused", len(p.to("billing"))-posts, outcomes(t, f.logs)["m-e1"])
	}
}

// A success between failures starts the count again; a 429 is no failure.
func TestAutoPauseResetBySuccess(t *testing.T) {
	ctx := context.Background()
	f, p, store := pausedFixture(t, func(c *worker.Config) { c.MaxAttempts = 0; c.AutoPause = time.Hour })
	state := func() destination.State { return stateOf(t, store, "billing") }
	start := f.clock.Now()
	p.errs["billing"] = forward.Classify(503, nil, nil, start)
	f.h.Handle(ctx, batch(t, stripeEvent("e1", "c1", "invoice.paid", "usd")))
	f.clock.Advance(30 * time.Minute)
	delete(p.errs, "billing")
	f.h.Handle(ctx, batch(t, stripeEvent("e2", "c2", "invoice.paid", "usd")))
	if s := state(); s.IsFailing() {
		t.Fatalf("after a success: %+v, want the streak ended", s)
	}
	p.errs["billing"] = forward.Classify(503, nil, nil, start)
	f.clock.Advance(40 * time.Minute) // 70 min after the first failure
	f.h.Handle(ctx, batch(t, stripeEvent("e3", "c3", "invoice.paid", "usd")))
	f.clock.Advance(50 * time.Minute)
	f.h.Handle(ctx, batch(t, stripeEvent("e4", "c4", "invoice.paid", "usd")))
	if s := state(); s.IsPaused() || !s.Failing.Since.Equal(start.Add(70*time.Minute)) {
		t.Errorf("failing 50 min since the success's next failure: %+v, want failing since then, not paused", s)
	}
	// 429s for hours: the destination is waited for, never failing.
	p.errs["support"] = forward.Classify(429, nil, nil, start)
	for i := range 5 {
		f.clock.Advance(time.Hour)
		f.h.Handle(ctx, batch(t, stripeEvent("t"+string(rune('a'+i)), "c9", "invoice.paid", "usd")))
	}
	if s, _ := store.States(ctx, "acme"); s["support"].IsFailing() || s["support"].IsPaused() {
		t.Errorf("support after 5 h of 429s: %+v, want neither failing nor paused", s["support"])
	}
}

// PausePoll bounds a paused destination's poll (make run's few seconds);
// a longer bound leaves destination.Poll's minute as it is.
func TestPausePollBoundsTheWait(t *testing.T) {
	for _, tt := range []struct {
		name  string
		limit time.Duration
		want  int32
	}{
		{"default", 0, 60},
		{"bounded", 5 * time.Second, 5},
		{"bound above the poll", 2 * time.Minute, 60},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			f, p, store := pausedFixture(t, func(c *worker.Config) { c.PausePoll = tt.limit })
			if _, err := store.Pause(ctx, "acme", "billing", "maintenance", f.clock.Now()); err != nil {
				t.Fatal(err)
			}
			e1 := stripeEvent("e1", "c1", "invoice.paid", "usd")
			resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e1, 1)}})
			if got := failed(resp); !slices.Equal(got, []string{"m-e1"}) || len(p.to("billing")) != 0 {
				t.Fatalf("failures %v, billing got %v; want e1 waiting", got, p.to("billing"))
			}
			if v := f.sqs.visibility["rh-e1"]; v != tt.want {
				t.Errorf("PausePoll %s: e1's visibility = %ds, want %ds", tt.limit, v, tt.want)
			}
		})
	}
}

// PausePoll leaves the poll of a pause older than destination.MinPoll as
// destination.Poll has it: a long pause costs no more receives.
func TestPausePollOnlyForYoungPauses(t *testing.T) {
	ctx := context.Background()
	f, _, store := pausedFixture(t, func(c *worker.Config) { c.PausePoll = 5 * time.Second })
	if _, err := store.Pause(ctx, "acme", "billing", "maintenance", f.clock.Now().Add(-2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	e1 := stripeEvent("e1", "c1", "invoice.paid", "usd")
	_, _ = f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e1, 1)}})
	if v := f.sqs.visibility["rh-e1"]; v != 60 {
		t.Errorf("visibility of a 2-minute pause's message = %ds, want destination.Poll's 60 s", v)
	}
}
