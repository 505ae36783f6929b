package worker_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/ratelimit"
	"github.com/hookpack/hookpack/pkg/worker"
)

// A rate slot further away than MaxSlotWait is waited for in the queue, not
// in the invocation: the batch (and every other destination's message in
// it) is never held longer than that by one destination's rate, however
// long the invocation could run, and the wait is no attempt.
func TestSlotWaitBounded(t *testing.T) {
	const oneHz = `{"destinations": [
		{"name": "slow", "url": "https://slow.example/hooks", "secrets": ["whsec_c2VjcmV0"], "rate": "1/s", "burst": 1},
		{"name": "fast", "url": "https://fast.example/hooks", "secrets": ["whsec_c2VjcmV0"]}]}`
	f, p, lim := rated(t, oneHz, nil)
	f.reg.HandleForward(worker.Forward(fakeOutbound{out: outboundOf(t, oneHz)}, p))
	// Five conversations, each with its stream at both destinations.
	var ev events.SQSEvent
	for i := range 5 {
		e := env("e"+string(rune('a'+i)), "c"+string(rune('1'+i)))
		ev.Records = append(ev.Records, streamRec(t, e, queue.Stream{Destination: "slow"}, 1), streamRec(t, e, queue.Stream{Destination: "fast"}, 1))
	}
	start := f.clock.Now()
	// The invocation could sleep for every slot (an hour of working time).
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(time.Hour))
	defer cancel()
	resp, _ := f.h.Handle(ctx, ev)

	for _, at := range lim.waits {
		if at.Sub(start) > worker.MaxSlotWait {
			t.Errorf("slept until %v after the start, want at most MaxSlotWait (%v)", at.Sub(start), worker.MaxSlotWait)
		}
	}
	if held := f.clock.Now().Sub(start); held > worker.MaxSlotWait {
		t.Errorf("the batch took %v of the clock, want at most MaxSlotWait (%v)", held, worker.MaxSlotWait)
	}
	// Slots at 0 s and 1 s fit; the three others wait in the queue.
	if got := len(p.to("slow")); got != 2 {
		t.Errorf("%d posts to slow, want 2 (the slots within %v)", got, worker.MaxSlotWait)
	}
	if got := len(p.to("fast")); got != 5 {
		t.Errorf("%d posts to fast, want all 5", got)
	}
	if got := len(resp.BatchItemFailures); got != 3 {
		t.Fatalf("failures %v, want the 3 slow messages without a slot\n%s", failed(resp), f.logs)
	}
	for _, x := range resp.BatchItemFailures {
		// Back when the limit can grant its slot within MaxSlotWait: the
		// next slot (2 s) less MaxSlotWait, at least a second from now.
		if v := f.sqs.visibility["rh-"+x.ItemIdentifier[2:]]; v < 1 || v > 2 {
			t.Errorf("%s visibility %d s, want 1-2 s (its slot less MaxSlotWait)", x.ItemIdentifier, v)
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
}

// A slot is used at its time, or reserved again: a conversation's second
// message whose slot came while the first one's post took 10 s does not
// post on that old slot, which the limiter counted 10 s ago and has
// granted again since (burst + rate × t would not hold at the target).
func TestStaleSlotReservedAgain(t *testing.T) {
	const rate = `{"destinations": [{"name": "slow", "url": "https://slow.example/hooks", "secrets": ["whsec_c2VjcmV0"], "rate": "1/s", "burst": 2}]}`
	f, p, lim := rated(t, rate, nil)
	long := &clockPoster{p: p, advance: func() {
		f.clock.mu.Lock()
		f.clock.t = f.clock.t.Add(10 * time.Second)
		f.clock.mu.Unlock()
	}}
	f.reg.HandleForward(worker.Forward(fakeOutbound{out: outboundOf(t, rate)}, long))
	var ev events.SQSEvent
	for _, id := range []string{"ea", "eb"} {
		ev.Records = append(ev.Records, streamRec(t, env(id, "c1"), queue.Stream{Destination: "slow"}, 1))
	}
	ctx, cancel := context.WithDeadline(context.Background(), f.clock.Now().Add(time.Minute))
	defer cancel()
	if resp, _ := f.h.Handle(ctx, ev); len(resp.BatchItemFailures) != 0 || len(p.to("slow")) != 2 {
		t.Fatalf("failures %v, posts %v; want both posted\n%s", failed(resp), p.to("slow"), f.logs)
	}
	if lim.reserves != 2 {
		t.Errorf("%d reservations, want 2: the second message's slot was 10 s old", lim.reserves)
	}
	// The second post is counted where it happened: of the burst of 2,
	// one slot is left at that instant.
	now := f.clock.Now()
	r, err := lim.Memory.Reserve(ctx, ratelimit.Key{Tenant: "acme", Name: "dest:slow"}, ratelimit.Limit{Rate: 1, Burst: 2}, 2, 0, now)
	if err != nil || len(r.Slots) != 1 {
		t.Errorf("Reserve(2) as the second post was made = %v, %v; want 1 slot: the post took the other", r.Slots, err)
	}
}

// clockPoster advances the clock during its first post (a slow target).
type clockPoster struct {
	p       *destPoster
	advance func()
	once    sync.Once
}

func (c *clockPoster) Post(ctx context.Context, r forward.Request) error {
	err := c.p.Post(ctx, r)
	c.once.Do(c.advance)
	return err
}

// A message whose slot comes after a 429 paused its destination (in the
// same invocation, while it slept) does not post: the target would refuse
// it too. It waits for the pause, no attempt.
func TestSlotAfterA429Waits(t *testing.T) {
	const fast = `{"destinations": [{"name": "slow", "url": "https://slow.example/hooks", "secrets": ["whsec_c2VjcmV0"], "rate": "10/s", "burst": 1}]}`
	lim := &slowSignal{countingLimiter: countingLimiter{Memory: ratelimit.NewMemory(ratelimit.Options{})}, slowed: make(chan struct{})}
	sleeping := make(chan struct{})
	var f *fixture
	f = newFixture(t, func(c *worker.Config) {
		c.Limiter = lim
		c.Wait = func(ctx context.Context, until time.Time) bool {
			if until.After(f.clock.Now()) {
				// The later slot's message sleeps until the first one's
				// 429 paused the destination.
				close(sleeping)
				select {
				case <-lim.slowed:
				case <-time.After(10 * time.Second):
					t.Error("no 429 while the second message slept")
				}
				f.clock.mu.Lock()
				f.clock.t = until
				f.clock.mu.Unlock()
			}
			return ctx.Err() == nil
		}
	})
	p := &destPoster{now: f.clock.Now, errs: map[string]error{"slow": forward.Classify(429, http.Header{"Retry-After": {"20"}}, nil, time.Now())}}
	// The first slot's post is answered once the second message sleeps.
	held := heldPoster{p: p, until: sleeping, t: t}
	f.reg.Handle(worker.Any, worker.Any, worker.Forward(fakeOutbound{out: outboundOf(t, fast)}, &held))
	ev := eventsOf(t, 2, func(i int) string { return "c" + string(rune('1'+i)) })
	ctx, cancel := context.WithDeadline(context.Background(), f.clock.Now().Add(time.Minute))
	defer cancel()
	resp, _ := f.h.Handle(ctx, ev)
	if len(p.posts) != 1 || lim.slow != 1 {
		t.Errorf("%d posts, %d Slow calls; want 1 each: the slot after the 429 must not post", len(p.posts), lim.slow)
	}
	if len(resp.BatchItemFailures) != 2 {
		t.Fatalf("failures %v, want both waiting\n%s", failed(resp), f.logs)
	}
	for _, x := range resp.BatchItemFailures {
		if v := f.sqs.visibility["rh-"+x.ItemIdentifier[2:]]; v < 19 {
			t.Errorf("%s visibility %d s, want the 20 s pause", x.ItemIdentifier, v)
		}
	}
	for _, l := range f.logs.Lines(t) {
		if l["msg"] == "message" && (l["outcome"] != "paced" || l["attempt"] != nil) {
			t.Errorf("line %v: want outcome paced and no attempt", l)
		}
	}
}

// slowSignal closes slowed on the first Slow.
type slowSignal struct {
	countingLimiter
	once   sync.Once
	slowed chan struct{}
}

func (s *slowSignal) Slow(ctx context.Context, k ratelimit.Key, l ratelimit.Limit, d time.Duration, now time.Time) (time.Time, error) {
	defer s.once.Do(func() { close(s.slowed) })
	return s.countingLimiter.Slow(ctx, k, l, d, now)
}

// heldPoster answers its first request once until is closed.
type heldPoster struct {
	p     *destPoster
	until chan struct{}
	t     *testing.T
	once  sync.Once
}

func (h *heldPoster) Post(ctx context.Context, r forward.Request) error {
	h.once.Do(func() {
		select {
		case <-h.until:
		case <-time.After(10 * time.Second):
			h.t.Error("the second message never slept for its slot")
		}
	})
	return h.p.Post(ctx, r)
}
