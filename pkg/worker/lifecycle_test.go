package worker_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

// runs records the effects that ran, by event id and effect name.
type runs struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *runs) add(id, effect string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[id+"/"+effect]++
}

func (r *runs) count(id, effect string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[id+"/"+effect]
}

// sentAt dates rec's SentTimestamp (its queue retention runs from then).
func sentAt(rec events.SQSMessage, at time.Time) events.SQSMessage {
	rec.Attributes["SentTimestamp"] = strconv.FormatInt(at.UnixMilli(), 10)
	return rec
}

// One outcome per event, whatever its handler and wherever it was
// dead-lettered: a later copy of an event dead-lettered before it claimed
// anything, or before its last effect was reached, never runs an effect;
// a later copy of a done event dead-lettered before its claim is deleted,
// never dead-lettered.
func TestOneOutcomePerEvent(t *testing.T) {
	ctx := context.Background()
	// handler runs "notify" then "charge", custom effects only; the event
	// "fails" fails transiently before charge, "stop" permanently.
	handler := func(r *runs, failing map[string]error) worker.HandlerFunc {
		return func(ctx context.Context, ev *worker.Event) error {
			if err := ev.Once(ctx, "notify", func(context.Context, string) error { r.add(ev.EventID, "notify"); return nil }); err != nil {
				return err
			}
			if err := failing[ev.EventID]; err != nil {
				return err // a lost answer, before charge was claimed
			}
			return ev.Once(ctx, "charge", func(context.Context, string) error { r.add(ev.EventID, "charge"); return nil })
		}
	}
	old := func(f *fixture) time.Time { return f.clock.Now().Add(-13 * 24 * time.Hour) } // 1 day of retention left, inside the 48 h margin

	t.Run("dead-lettered behind an expiring message, before any claim", func(t *testing.T) {
		f := newFixture(t, nil)
		var r runs
		f.reg.Handle("stripe", worker.Any, handler(&r, map[string]error{"exp-a": errors.New("target answered 503")}))
		a, b := env("exp-a", "X"), env("exp-b", "X")
		resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{sentAt(rec(t, a, 1), old(f)), sentAt(rec(t, b, 1), old(f))}})
		if len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 2 || r.count("exp-b", "notify") != 0 {
			t.Fatalf("batch: failures %v, %d dead letters, b ran %d; want both dead-lettered, b never run", failed(resp), len(f.sqs.sent), r.count("exp-b", "notify"))
		}
		// The ingest's later copy of b (a sender's retry), and b's own
		// redelivery (its deletion lost).
		for _, m := range []events.SQSMessage{recAs(t, "m-exp-b-again", reenqueued(b), 1), rec(t, b, 2)} {
			resp, _ = f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{m}})
			if len(resp.BatchItemFailures) != 0 || r.count("exp-b", "notify")+r.count("exp-b", "charge") != 0 {
				t.Errorf("copy %s: failures %v, effects ran %d; want it deleted, nothing run after the dead letter", m.MessageId, failed(resp), r.count("exp-b", "notify")+r.count("exp-b", "charge"))
			}
		}
		if got := outcomes(t, f.logs)["m-exp-b-again"]; got != "skipped_dead_lettered" {
			t.Errorf("the later copy's outcome = %q, want skipped_dead_lettered", got)
		}
	})

	t.Run("dead-lettered before its last effect was reached", func(t *testing.T) {
		f := newFixture(t, func(c *worker.Config) { c.MaxAttempts = 1 })
		var r runs
		f.reg.Handle("stripe", worker.Any, handler(&r, map[string]error{"two": errors.New("answer lost")}))
		e := env("two", "Y")
		resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 1)}})
		if len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 1 || r.count("two", "notify") != 1 {
			t.Fatalf("first attempt: failures %v, %d dead letters, notify ran %d; want dead-lettered after notify", failed(resp), len(f.sqs.sent), r.count("two", "notify"))
		}
		f.reg = worker.NewRegistry()
		later := newFixtureOn(t, f, handler(&r, nil))
		resp, _ = later.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{recAs(t, "m-two-again", reenqueued(e), 1)}})
		if len(resp.BatchItemFailures) != 0 || r.count("two", "charge") != 0 || r.count("two", "notify") != 1 {
			t.Errorf("later copy: failures %v, charge ran %d, notify %d; want charge never run after the dead letter", failed(resp), r.count("two", "charge"), r.count("two", "notify"))
		}
		// Its replay runs what did not complete, once.
		replay := recAs(t, "m-two-replay", e, 1)
		replay.MessageAttributes = map[string]events.SQSMessageAttribute{worker.AttrReplayOf: {DataType: "String", StringValue: ptr("dlq-1")}}
		resp, _ = later.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{replay}})
		if len(resp.BatchItemFailures) != 0 || r.count("two", "charge") != 1 || r.count("two", "notify") != 1 {
			t.Errorf("replay: failures %v, charge ran %d, notify %d; want charge once, notify not again", failed(resp), r.count("two", "charge"), r.count("two", "notify"))
		}
	})

	t.Run("a later copy of a done event, dead-lettered before its claim", func(t *testing.T) {
		f := newFixture(t, nil)
		var r runs
		f.reg.Handle("stripe", worker.Any, handler(&r, map[string]error{"blocker": errors.New("target answered 503")}))
		done := env("done", "Z")
		if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, done, 1)}}); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("the event's first message failed: %v", failed(resp))
		}
		f.clock.Advance(time.Hour)
		blocker := env("blocker", "Z")
		copyOf := sentAt(recAs(t, "m-done-again", reenqueued(done), 1), old(f))
		resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{sentAt(rec(t, blocker, 1), old(f)), copyOf}})
		if len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 1 {
			t.Fatalf("failures %v, %d dead letters; want the blocker's only", failed(resp), len(f.sqs.sent))
		}
		if got := outcomes(t, f.logs)["m-done-again"]; got != "skipped_duplicate" {
			t.Errorf("the done event's later copy: outcome %q, want skipped_duplicate", got)
		}
		if rec, err := f.ledger.Record(ctx, ledger.Key{Tenant: "acme", Event: done.Key, Effect: ledger.EventEffect}); err != nil || rec.Dead() {
			t.Errorf("the done event's record = %+v, %v; want it not dead-lettered", rec, err)
		}
	})
}

// newFixtureOn is a handler on f's ledger, queue and clock with handler for
// every Stripe event: a redeployed worker.
func newFixtureOn(t *testing.T, f *fixture, handler worker.HandlerFunc) *fixture {
	g := *f
	g.reg = worker.NewRegistry()
	g.reg.Handle("stripe", worker.Any, handler)
	g.h = worker.New(worker.Config{Ledger: f.ledger, Handlers: g.reg, DLQ: f.sqs, Visibility: f.sqs,
		Retry: worker.Retry{Base: 4 * time.Second, Jitter: fixedJitter(0)}, Now: f.clock.Now})
	return &g
}

// lostCompletion fails every Complete while failing is set: the effect ran,
// its completion never landed.
type lostCompletion struct {
	*ledger.Memory
	failing bool
}

func (l *lostCompletion) Complete(ctx context.Context, lease ledger.Lease) error {
	if l.failing {
		return errors.New("throttled")
	}
	return l.Memory.Complete(ctx, lease)
}

// An effect whose earlier run may have started runs again with ev.Repeat
// set: its completion was not recorded, or it was interrupted.
func TestRepeatWhenAnEarlierRunMayHaveStarted(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	store := &lostCompletion{Memory: f.ledger, failing: true}
	var repeats []bool
	reg := worker.NewRegistry()
	reg.Handle("stripe", worker.Any, func(ctx context.Context, ev *worker.Event) error {
		return ev.Once(ctx, "email", func(context.Context, string) error { repeats = append(repeats, ev.Repeat); return nil })
	})
	h := worker.New(worker.Config{Ledger: store, Handlers: reg, DLQ: f.sqs, Visibility: f.sqs, Now: f.clock.Now,
		FinishTimeout: 100 * time.Millisecond, SafetyMargin: time.Second})
	e := env("repeat", "R")
	if resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 1)}}); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("a run whose completion was not recorded: failures %v, want it retried", failed(resp))
	}
	store.failing = false
	f.clock.Advance(time.Minute)
	if resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 2)}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the retry failed: %v", failed(resp))
	}
	if len(repeats) != 2 || repeats[0] || !repeats[1] {
		t.Errorf("Repeat in the runs = %v, want [false true]", repeats)
	}
}

// Rules that only a fault shows, pinned one test each.
func TestPinnedRules(t *testing.T) {
	ctx := context.Background()

	t.Run("an effect run earlier in the message is not run or claimed again", func(t *testing.T) {
		f := newFixture(t, nil)
		p := &fakePoster{}
		fwd := worker.Forward(fakeOutbound{out: tenant.Outbound{TargetURL: "https://acme.example/hooks", Secrets: []string{"whsec_c2VjcmV0"}}}, p)
		f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			if err := fwd(ctx, ev); err != nil { // two routing rules matched the event
				return err
			}
			return fwd(ctx, ev)
		})
		resp, _ := f.h.Handle(ctx, batch(t, env("twice", "T")))
		if len(resp.BatchItemFailures) != 0 || len(p.reqs) != 1 {
			t.Errorf("forwarded twice in one message: failures %v, %d posts; want done, one post", failed(resp), len(p.reqs))
		}
	})

	t.Run("an invalid entity is a permanent error", func(t *testing.T) {
		f := newFixture(t, nil)
		f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			_, err := ev.ApplyIfNewer(ctx, "", 1, nil)
			return err
		})
		resp, _ := f.h.Handle(ctx, batch(t, env("no-entity", "E")))
		if len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 1 {
			t.Errorf("ApplyIfNewer with an empty entity: failures %v, %d dead letters; want dead-lettered at once", failed(resp), len(f.sqs.sent))
		}
	})

	t.Run("no dead letter after the batch was cut off", func(t *testing.T) {
		// The failed attempt's count answers after the cut-off: the batch
		// has reported the message failed, so it must not reach the DLQ too.
		f := newFixture(t, nil)
		slow := &slowCount{Memory: f.ledger, delay: 900 * time.Millisecond, done: make(chan struct{}, 2)}
		h := worker.New(worker.Config{Ledger: slow, Handlers: f.reg, DLQ: f.sqs, Visibility: f.sqs,
			SafetyMargin: 300 * time.Millisecond, FinishTimeout: 2 * time.Second})
		f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			return worker.Permanent(errors.New("customer deleted"))
		})
		dctx, cancel := context.WithDeadline(ctx, time.Now().Add(800*time.Millisecond))
		defer cancel()
		resp, _ := h.Handle(dctx, batch(t, env("straggler", "S")))
		if len(resp.BatchItemFailures) != 1 {
			t.Fatalf("the straggler's message: failures %v, want it reported failed", failed(resp))
		}
		<-slow.done
		time.Sleep(300 * time.Millisecond) // the straggler's dead-letter path
		f.sqs.mu.Lock()
		defer f.sqs.mu.Unlock()
		if len(f.sqs.sent) != 0 {
			t.Errorf("%d dead letters of a message the batch reported failed, want 0 (it would run again and be dead-lettered twice)", len(f.sqs.sent))
		}
	})
}

// slowCount answers FailedAttempt after delay, and says when it did.
type slowCount struct {
	*ledger.Memory
	delay time.Duration
	done  chan struct{}
}

func (s *slowCount) FailedAttempt(ctx context.Context, messageID string, receive int) (int, error) {
	time.Sleep(s.delay)
	defer func() { s.done <- struct{}{} }()
	return s.Memory.FailedAttempt(ctx, messageID, receive)
}

// A done event is never dead-lettered, near the end of its retention too. A
// message processed there whose deletion is lost comes back after its
// visibility timeout to its own unfinished claims: with completion by
// deletion a lost deletion looks like a crash, and the worker dead-lettered
// the done event with "effect forward was interrupted again" (a replay of
// that dead letter posting the forward again). Near the end the message
// records its success itself, whatever its handler, so the redelivery finds
// the event done and is deleted. It does so within twice the margin of that
// end, so a message processed before and redelivered inside the margin —
// after a worker outage — runs its forward again under the same key, as any
// lost deletion does, and is done.
func TestLostDeletionNearRetentionEndIsNotDeadLettered(t *testing.T) {
	ctx := context.Background()
	handlers := []struct {
		name string
		// register handles every event and returns the idempotency keys
		// its target(s) received.
		register func(f *fixture) (keys func() []string)
	}{
		{"forward", func(f *fixture) func() []string {
			_, runs := oneEffect(f, true)
			return runs
		}},
		{"destinations", func(f *fixture) func() []string {
			p := &destPoster{now: f.clock.Now}
			f.reg.Handle(worker.Any, worker.Any, worker.Forward(fakeOutbound{out: outboundOf(t, threeDestinations)}, p))
			return func() []string {
				p.mu.Lock()
				defer p.mu.Unlock()
				var keys []string
				for _, x := range p.posts {
					keys = append(keys, x.key)
				}
				return keys
			}
		}},
		{"custom effect", func(f *fixture) func() []string {
			_, runs := oneEffect(f, false)
			return runs
		}},
	}
	for _, hd := range handlers {
		t.Run(hd.name, func(t *testing.T) {
			onLedgers(t, nil, func(t *testing.T, f *fixture, store records) {
				keys := hd.register(f)
				handle := func(m events.SQSMessage) events.SQSEventResponse {
					t.Helper()
					resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{m}})
					return resp
				}
				// Sent 13 days ago: inside the 48 h margin of its 14-day retention.
				e := stripeEvent("late-"+strings.ReplaceAll(hd.name, " ", "-"), "L", "invoice.paid", "eur")
				first := sentAt(rec(t, e, 1), f.clock.Now().Add(-13*24*time.Hour))
				if resp := handle(first); len(resp.BatchItemFailures) != 0 || len(keys()) == 0 {
					t.Fatalf("first receive: failures %v, %d effects run; want it done", failed(resp), len(keys()))
				}
				ran := len(keys())
				// Its deletion is lost: SQS hands it back 20 minutes later, after
				// every lease ended.
				f.clock.Advance(20 * time.Minute)
				again := sentAt(rec(t, e, 2), f.clock.Now().Add(-13*24*time.Hour-20*time.Minute))
				resp := handle(again)
				if len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 0 {
					t.Fatalf("the redelivery of a done message: failures %v, %d dead letters (%v); want it deleted, never dead-lettered",
						failed(resp), len(f.sqs.sent), deadReasons(f))
				}
				if got := outcomes(t, f.logs)[again.MessageId]; got != "skipped_duplicate" || len(keys()) != ran {
					t.Errorf("the redelivery: outcome %q, effects run %d then %d; want skipped_duplicate, nothing run again", got, ran, len(keys()))
				}
				r, err := store.Record(ctx, ledger.Key{Tenant: "acme", Event: e.Key, Effect: ledger.EventEffect})
				if err != nil || r.Dead() || r.Status != ledger.StatusCompleted {
					t.Errorf("the event's record = %+v, %v; want it COMPLETED, never dead", r, err)
				}
			})
		})
	}

	t.Run("its completion write failing, the deletion records it", func(t *testing.T) {
		f := newFixture(t, nil)
		store := &lostCompletion{Memory: f.ledger, failing: true}
		h := worker.New(worker.Config{Ledger: store, Handlers: f.reg, DLQ: f.sqs, Visibility: f.sqs, Now: f.clock.Now,
			FinishTimeout: 100 * time.Millisecond, SafetyMargin: time.Second})
		_, keys := oneEffect(f, true)
		e := env("late-unrecorded", "L")
		resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{sentAt(rec(t, e, 1), f.clock.Now().Add(-13*24*time.Hour))}})
		if len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 0 || len(keys()) != 1 {
			t.Errorf("failures %v, %d dead letters, %d forwards; want it done (the ledger's throttling is no failure of the event)", failed(resp), len(f.sqs.sent), len(keys()))
		}
	})

	t.Run("processed before twice the margin, redelivered inside it", func(t *testing.T) {
		onLedgers(t, nil, func(t *testing.T, f *fixture, _ records) {
			_, keys := oneEffect(f, true)
			e := env("late-edge", "L")
			// Sent 9 days ago: its success is left to its deletion (5 days
			// of retention left, more than twice the 48 h margin).
			sent := f.clock.Now().Add(-9 * 24 * time.Hour)
			if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{sentAt(rec(t, e, 1), sent)}}); len(resp.BatchItemFailures) != 0 {
				t.Fatalf("first receive: failures %v", failed(resp))
			}
			// Its deletion lost, back inside the margin after a worker outage.
			f.clock.Advance(84 * time.Hour)
			resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{sentAt(rec(t, e, 2), sent)}})
			if len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 0 {
				t.Fatalf("the redelivery: failures %v, %d dead letters (%v); want it done, never dead-lettered", failed(resp), len(f.sqs.sent), deadReasons(f))
			}
			if k := keys(); len(k) != 2 || k[0] != k[1] {
				t.Errorf("forwards %v, want two under one key (the lost deletion's repeat, which the receiver deduplicates)", k)
			}
		})
	})
}

// deadReasons returns the reasons of f's dead letters.
func deadReasons(f *fixture) []string {
	f.sqs.mu.Lock()
	defer f.sqs.mu.Unlock()
	var out []string
	for _, s := range f.sqs.sent {
		out = append(out, s.msg.Attributes[worker.AttrReason])
	}
	return out
}
