package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/ratelimit"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

// destPoster records each request with the clock's time and answers per
// destination (Hookpack-Destination) from errs.
type destPoster struct {
	mu    sync.Mutex
	now   func() time.Time
	errs  map[string]error
	posts []destPost
}

type destPost struct {
	dest, event, key string
	at               time.Time
}

func (p *destPoster) Post(_ context.Context, r forward.Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var body struct{ ID string }
	json.Unmarshal(r.Body, &body)
	d := r.Headers["Hookpack-Destination"]
	p.posts = append(p.posts, destPost{dest: d, event: body.ID, key: r.IdempotencyKey, at: p.now()})
	return p.errs[d]
}

func (p *destPoster) to(dest string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for _, x := range p.posts {
		if x.dest == dest {
			ids = append(ids, x.event)
		}
	}
	return ids
}

func outboundOf(t *testing.T, doc string) tenant.Outbound {
	t.Helper()
	var o tenant.Outbound
	if err := json.Unmarshal([]byte(doc), &o); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate("acme"); err != nil {
		t.Fatal(err)
	}
	return o
}

const threeDestinations = `{"destinations": [
	{"name": "billing", "url": "https://billing.example/hooks", "secrets": ["whsec_c2VjcmV0"], "filter": {"events": ["stripe:invoice.*"]}},
	{"name": "support", "url": "https://support.example/hooks", "secrets": ["whsec_c2VjcmV0"], "filter": {"events": ["github:*"]}},
	{"name": "eur", "url": "https://eur.example/hooks", "secrets": ["whsec_c2VjcmV0"], "filter": {"where": [{"path": "currency", "equals": "eur"}]}}
]}`

func stripeEvent(id, conv, typ, currency string) *envelope.Envelope {
	e := env(id, conv)
	e.Type = typ
	e.SetBody([]byte(`{"id":"` + id + `","currency":"` + currency + `"}`))
	return e
}

// Each destination gets the events its filter selects, under its own
// Idempotency-Key; an event none selects is done ("filtered"), not an
// error; a redelivery posts nothing again.
func TestDestinationsFilterAndOwnKeys(t *testing.T) {
	f := newFixture(t, nil)
	p := &destPoster{now: f.clock.Now}
	f.reg.Handle(worker.Any, worker.Any, worker.Forward(fakeOutbound{out: outboundOf(t, threeDestinations)}, p))
	paid := stripeEvent("e1", "c1", "invoice.paid", "eur")
	charge := stripeEvent("e2", "c2", "charge.refunded", "usd")
	both := batch(t, paid, charge)
	resp, _ := f.h.Handle(context.Background(), both)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", failed(resp))
	}
	if got := p.to("billing"); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("billing got %v, want [e1]", got)
	}
	if got := p.to("eur"); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("eur got %v, want [e1]", got)
	}
	if got := p.to("support"); len(got) != 0 {
		t.Errorf("support got %v, want nothing (its filter excludes stripe)", got)
	}
	keys := map[string]bool{}
	for _, x := range p.posts {
		keys[x.key] = true
		want := ledger.Key{Tenant: "acme", Event: paid.Key, Effect: worker.DestinationEffect(x.dest)}.IdempotencyKey()
		if x.key != want {
			t.Errorf("%s's Idempotency-Key = %s, want %s", x.dest, x.key, want)
		}
	}
	if len(keys) != 2 {
		t.Errorf("Idempotency-Keys %v: want one per destination", keys)
	}
	outcomes := map[string]string{}
	for _, l := range f.logs.Lines(t) {
		if l["msg"] == "message" {
			outcomes[l["eventId"].(string)] = l["outcome"].(string)
		}
	}
	if outcomes["e1"] != "processed" || outcomes["e2"] != "filtered" {
		t.Errorf("outcomes %v, want e1 processed and e2 filtered", outcomes)
	}
	// A copy of the batch (a lost deletion): nothing is posted again.
	f.h.Handle(context.Background(), both)
	if len(p.posts) != 2 {
		t.Errorf("%d posts after the redelivery, want still 2", len(p.posts))
	}
}

// A destination that fails holds its conversation (at every destination)
// while the others' effects, done once, are not repeated: its retry posts
// to it alone; a permanent refusal dead-letters the event, and the replay
// delivers only where it did not complete.
func TestDestinationFailureIsolated(t *testing.T) {
	two := `{"destinations": [
		{"name": "a", "url": "https://a.example/hooks", "secrets": ["whsec_c2VjcmV0"]},
		{"name": "b", "url": "https://b.example/hooks", "secrets": ["whsec_c2VjcmV0"]}]}`
	f := newFixture(t, func(c *worker.Config) { c.MaxAttempts = 3 })
	p := &destPoster{now: f.clock.Now, errs: map[string]error{"b": forward.Classify(503, nil, nil, time.Now())}}
	f.reg.Handle(worker.Any, worker.Any, worker.Forward(fakeOutbound{out: outboundOf(t, two)}, p))
	e1, e2 := stripeEvent("e1", "c1", "invoice.paid", "usd"), stripeEvent("e2", "c1", "invoice.paid", "usd")
	first := events.SQSEvent{Records: []events.SQSMessage{rec(t, e1, 1), rec(t, e2, 1)}}
	resp, _ := f.h.Handle(context.Background(), first)
	if got := failed(resp); !slices.Equal(got, []string{"m-e1", "m-e2"}) {
		t.Fatalf("failures %v, want e1 (b failed) and e2 held behind it", got)
	}
	if a, b := p.to("a"), p.to("b"); !slices.Equal(a, []string{"e1"}) || !slices.Equal(b, []string{"e1"}) {
		t.Fatalf("a got %v, b got %v; want e1 each, e2 held back at both", a, b)
	}
	// Its next attempt posts to b only; b now refuses it for good.
	p.errs["b"] = forward.Classify(422, nil, nil, time.Now())
	f.clock.Advance(time.Minute)
	f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e1, 2), rec(t, e2, 2)}})
	if a, b := p.to("a"), p.to("b"); !slices.Equal(a, []string{"e1", "e2"}) || !slices.Equal(b, []string{"e1", "e1", "e2"}) {
		t.Fatalf("after the retry a got %v, b got %v; want a: e1 e2 (no repeat), b: e1 e1 e2", a, b)
	}
	if len(f.sqs.sent) != 2 {
		t.Fatalf("%d dead letters, want e1's and e2's (b refuses both)", len(f.sqs.sent))
	}
	// b accepts again; the replay of e1 posts to b alone.
	delete(p.errs, "b")
	replayed := recAs(t, "r-e1", e1, 1)
	dlqID := "dlq-e1"
	replayed.MessageAttributes = map[string]events.SQSMessageAttribute{worker.AttrReplayOf: {DataType: "String", StringValue: &dlqID}}
	resp, _ = f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{replayed}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("replay failed: %v\n%s", failed(resp), f.logs)
	}
	if a, b := p.to("a"), p.to("b"); len(a) != 2 || !slices.Equal(b, []string{"e1", "e1", "e2", "e1"}) {
		t.Errorf("after the replay a got %v, b got %v; want a unchanged, b once more e1", a, b)
	}
}

// Two copies of one event's body re-sent by hand (two dead letters of one
// message, neither naming its event, re-sent without the replay tool's
// marker), in one batch: the second counts each destination the first
// delivered done once the first is deleted, and posts nothing again (make
// simulate SEED=12 found it posting again to billing). Whether the first
// attempt reached a destination (billing refused) or none (the tenant's
// destinations could not be read), and so whether the destinations'
// records exist before the copies run.
func TestTwoHandResendsOfOneEventPostOnce(t *testing.T) {
	two := `{"destinations": [
		{"name": "billing", "url": "https://billing.example/hooks", "secrets": ["whsec_c2VjcmV0"]},
		{"name": "support", "url": "https://support.example/hooks", "secrets": ["whsec_c2VjcmV0"]}]}`
	for _, tt := range []struct {
		name                     string
		refused, unreadable      bool
		wantBilling, wantSupport []string
	}{
		{"billing refused the first attempt", true, false, []string{"e1", "e1"}, []string{"e1"}},
		{"no destination reached", false, true, []string{"e1"}, []string{"e1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *worker.Config) { c.MaxAttempts = 3 })
			p := &destPoster{now: f.clock.Now, errs: map[string]error{}}
			out := &flakyOutbound{out: outboundOf(t, two)}
			if tt.refused {
				p.errs["billing"] = forward.Classify(503, nil, nil, time.Now())
			}
			if tt.unreadable {
				out.err = errors.New("read the tenant's destinations: throttled")
			}
			f.reg.Handle(worker.Any, worker.Any, worker.Forward(out, p))
			e := stripeEvent("e1", "c1", "invoice.paid", "usd")
			// Its message fails, and is given up later with a dead letter
			// that names no event (its body unreadable then): the event's
			// record is left as that failed attempt wrote it.
			if resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 1)}}); len(resp.BatchItemFailures) != 1 {
				t.Fatalf("first attempt: failures %v, want it retried", failed(resp))
			}
			delete(p.errs, "billing")
			out.err = nil
			f.clock.Advance(time.Hour)
			first, second := recAs(t, "hand-1-"+t.Name(), e, 1), recAs(t, "hand-2-"+t.Name(), e, 1)
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{first, second}})
			if got := failed(resp); len(got) > 1 || len(got) == 1 && got[0] != second.MessageId {
				t.Fatalf("failures %v, want at most the second copy back", got)
			}
			// The second copy again, after every lease of the first ended.
			for i := 2; i <= 3 && len(resp.BatchItemFailures) > 0; i++ {
				f.clock.Advance(time.Hour)
				resp, _ = f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{recAs(t, second.MessageId, e, i)}})
			}
			if len(resp.BatchItemFailures) != 0 {
				t.Fatalf("the second copy never ended: %v\n%s", failed(resp), f.logs)
			}
			if b, s := p.to("billing"), p.to("support"); !slices.Equal(b, tt.wantBilling) || !slices.Equal(s, tt.wantSupport) {
				t.Errorf("billing got %v, support %v; want %v and %v (once each, beside a refused post)", b, s, tt.wantBilling, tt.wantSupport)
			}
			if got := outcomes(t, f.logs)[second.MessageId]; got != "skipped_duplicate" {
				t.Errorf("the second copy's outcome = %q, want skipped_duplicate", got)
			}
		})
	}
}

// flakyOutbound is a tenant's destinations whose read fails while err is set.
type flakyOutbound struct {
	out tenant.Outbound
	err error
}

func (f *flakyOutbound) Get(context.Context, string) (tenant.Outbound, error) { return f.out, f.err }

// countingLimiter counts Reserve and Slow calls on the memory twin.
type countingLimiter struct {
	*ratelimit.Memory
	mu             sync.Mutex
	reserves, slow int
	waits          []time.Time
}

func (c *countingLimiter) Reserve(ctx context.Context, k ratelimit.Key, l ratelimit.Limit, n int, maxWait time.Duration, now time.Time) (ratelimit.Reservation, error) {
	c.mu.Lock()
	c.reserves++
	c.mu.Unlock()
	return c.Memory.Reserve(ctx, k, l, n, maxWait, now)
}

func (c *countingLimiter) Slow(ctx context.Context, k ratelimit.Key, l ratelimit.Limit, d time.Duration, now time.Time) (time.Time, error) {
	c.mu.Lock()
	c.slow++
	c.mu.Unlock()
	return c.Memory.Slow(ctx, k, l, d, now)
}

// rated is a fixture whose waits advance its clock, with a counted limiter;
// lim.waits are the slot times waited for.
func rated(t *testing.T, outbound string, errs map[string]error) (*fixture, *destPoster, *countingLimiter) {
	lim := &countingLimiter{Memory: ratelimit.NewMemory(ratelimit.Options{})}
	var f *fixture
	f = newFixture(t, func(c *worker.Config) {
		c.Limiter = lim
		c.Wait = func(ctx context.Context, until time.Time) bool {
			lim.mu.Lock()
			lim.waits = append(lim.waits, until)
			lim.mu.Unlock()
			f.clock.mu.Lock()
			if until.After(f.clock.t) {
				f.clock.t = until
			}
			f.clock.mu.Unlock()
			return ctx.Err() == nil
		}
	})
	p := &destPoster{now: f.clock.Now, errs: errs}
	f.reg.Handle(worker.Any, worker.Any, worker.Forward(fakeOutbound{out: outboundOf(t, outbound)}, p))
	return f, p, lim
}

func eventsOf(t *testing.T, n int, conv func(i int) string) events.SQSEvent {
	var ev events.SQSEvent
	for i := range n {
		ev.Records = append(ev.Records, rec(t, stripeEvent("e"+string(rune('a'+i)), conv(i), "invoice.paid", "usd"), 1))
	}
	return ev
}

// A destination's rate holds across the batch's conversations, reserved
// in one call per invocation; waiting is no attempt.
func TestDestinationRate(t *testing.T) {
	const ten = `{"destinations": [{"name": "slow", "url": "https://slow.example/hooks", "secrets": ["whsec_c2VjcmV0"], "rate": "10/s", "burst": 1}]}`
	f, p, lim := rated(t, ten, nil)
	ev := eventsOf(t, 6, func(i int) string { return []string{"c1", "c2", "c3"}[i%3] })
	ctx, cancel := context.WithDeadline(context.Background(), f.clock.Now().Add(time.Hour))
	defer cancel()
	resp, _ := f.h.Handle(ctx, ev)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v\n%s", failed(resp), f.logs)
	}
	if lim.reserves != 1 {
		t.Errorf("%d reservations, want 1 for the invocation", lim.reserves)
	}
	// Each post follows the wait for its slot (the groups run
	// concurrently, so the fake clock orders the slots, not the posts).
	at := slices.Clone(lim.waits)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	if len(at) != 6 || len(p.posts) != 6 {
		t.Fatalf("%d waits and %d posts, want 6 each", len(at), len(p.posts))
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < 100*time.Millisecond {
			t.Errorf("slots %d and %d %v apart, want ≥ 100ms at 10/s with burst 1", i-1, i, gap)
		}
	}
}

// Slots that do not fit before the work deadline: the messages left wait
// outside the invocation ("paced", visibility = the wait) without an
// attempt; a 429 pauses the destination for the whole batch.
func TestDestinationPacedAndSlowed(t *testing.T) {
	const slow = `{"destinations": [{"name": "slow", "url": "https://slow.example/hooks", "secrets": ["whsec_c2VjcmV0"], "rate": "1/m", "burst": 1}]}`
	t.Run("paced", func(t *testing.T) {
		f, p, _ := rated(t, slow, nil)
		ev := eventsOf(t, 3, func(i int) string { return "c" + string(rune('1'+i)) })
		ctx, cancel := context.WithDeadline(context.Background(), f.clock.Now().Add(30*time.Second))
		defer cancel()
		resp, _ := f.h.Handle(ctx, ev)
		if len(p.posts) != 1 || len(resp.BatchItemFailures) != 2 {
			t.Fatalf("%d posts, failures %v; want 1 post and 2 paced\n%s", len(p.posts), failed(resp), f.logs)
		}
		for _, id := range failed(resp) {
			rh := "rh-" + id[2:]
			// Its slot is a minute away; it comes back when a reservation
			// can get it within an invocation (the retry the limit gave).
			if v := f.sqs.visibility[rh]; v < 30 || v > 60 {
				t.Errorf("%s visibility %d s, want the wait until its slot fits an invocation (30-60 s)", id, v)
			}
		}
		for _, l := range f.logs.Lines(t) {
			if l["msg"] == "message" && l["outcome"] != "processed" && (l["outcome"] != "paced" || l["attempt"] != nil) {
				t.Errorf("line %v: want outcome paced and no attempt", l)
			}
		}
		if len(f.sqs.sent) != 0 {
			t.Errorf("dead letters %v: waiting must never dead-letter", f.sqs.sent)
		}
	})
	t.Run("429", func(t *testing.T) {
		const fast = `{"destinations": [{"name": "slow", "url": "https://slow.example/hooks", "secrets": ["whsec_c2VjcmV0"], "rate": "100/s", "burst": 10}]}`
		f, p, lim := rated(t, fast, map[string]error{"slow": forward.Classify(429, http.Header{"Retry-After": {"20"}}, nil, time.Now())})
		ev := eventsOf(t, 4, func(i int) string { return "c" + string(rune('1'+i)) })
		ctx, cancel := context.WithDeadline(context.Background(), f.clock.Now().Add(5*time.Minute))
		defer cancel()
		resp, _ := f.h.Handle(ctx, ev)
		if len(resp.BatchItemFailures) != 4 {
			t.Fatalf("failures %v, want all 4 paced", failed(resp))
		}
		if lim.slow < 1 || len(p.posts) > 1+lim.slow {
			t.Errorf("%d posts, %d Slow calls: after a 429 the destination must pause for the batch", len(p.posts), lim.slow)
		}
		for _, id := range failed(resp) {
			if v := f.sqs.visibility["rh-"+id[2:]]; v < 19 {
				t.Errorf("%s visibility %d s, want the 20 s pause", id, v)
			}
		}
		if len(f.sqs.sent) != 0 {
			t.Errorf("dead letters %v: a 429 of a rated destination is no attempt", f.sqs.sent)
		}
	})
}

// A custom effect takes from a named limit of its tenant with the same
// rules: one reservation for the batch, the messages without a slot paced
// (no attempt), a bad limit name permanent.
func TestEventPace(t *testing.T) {
	lim := &countingLimiter{Memory: ratelimit.NewMemory(ratelimit.Options{})}
	f := newFixture(t, func(c *worker.Config) {
		c.Limiter = lim
		c.Wait = func(ctx context.Context, until time.Time) bool { return ctx.Err() == nil }
	})
	var calls []string
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		return ev.Once(ctx, "crm", func(ctx context.Context, key string) error {
			if err := ev.Pace(ctx, "crm-api", ratelimit.Limit{Rate: 1.0 / 60, Burst: 1}); err != nil {
				return err
			}
			calls = append(calls, ev.EventID)
			return nil
		})
	})
	ev := eventsOf(t, 3, func(i int) string { return "c" + string(rune('1'+i)) })
	ctx, cancel := context.WithDeadline(context.Background(), f.clock.Now().Add(30*time.Second))
	defer cancel()
	resp, _ := f.h.Handle(ctx, ev)
	if len(calls) != 1 || len(resp.BatchItemFailures) != 2 || lim.reserves != 1 {
		t.Fatalf("calls %v, failures %v, %d reservations; want 1 call, 2 paced, 1 reservation\n%s", calls, failed(resp), lim.reserves, f.logs)
	}
	for _, l := range f.logs.Lines(t) {
		if l["msg"] == "message" && l["outcome"] != "processed" && (l["outcome"] != "paced" || l["attempt"] != nil) {
			t.Errorf("line %v: want outcome paced and no attempt", l)
		}
	}
	f2 := newFixture(t, nil)
	f2.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		return ev.Pace(ctx, "no spaces allowed", ratelimit.Limit{Rate: 1, Burst: 1})
	})
	f2.h.Handle(context.Background(), batch(t, env("e1", "c1")))
	if len(f2.sqs.sent) != 1 {
		t.Errorf("a bad limit name: %d dead letters, want 1 (permanent)", len(f2.sqs.sent))
	}
}
