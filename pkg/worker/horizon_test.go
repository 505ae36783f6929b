package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

// The faults past a single message's retry: a whole invocation that fails
// (a hung effect, a duplicate invocation), a conversation blocked for days,
// visibility changes SQS would reject.

// One effect that ignores its context must not take the batch down: Handle
// answers before the invocation's deadline, the other conversations'
// messages are reported done (so SQS deletes them and their effects never
// run again), and the hung message is a failed attempt that comes back
// after its lease. Its late completion changes nothing.
func TestHungEffectDoesNotRepeatTheBatch(t *testing.T) {
	f := newFixture(t, func(c *worker.Config) {
		c.SafetyMargin, c.FinishTimeout, c.EffectTimeout = time.Second, 300*time.Millisecond, 100*time.Millisecond
	})
	release := make(chan struct{})
	hungReturned := make(chan struct{})
	runs := map[string]int{}
	var mu = make(chan struct{}, 1)
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		return ev.Once(ctx, "email", func(context.Context, string) error {
			mu <- struct{}{}
			runs[ev.EventID]++
			<-mu
			if ev.Conversation == "hung" {
				<-release // net/smtp takes no context
				close(hungReturned)
			}
			return nil
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	ev := batch(t, env("h1", "hung"), env("h2", "hung"), env("a1", "A"), env("b1", "B"))
	type answer struct {
		resp events.SQSEventResponse
		at   time.Time
	}
	got := make(chan answer, 1)
	go func() {
		resp, _ := f.h.Handle(ctx, ev)
		got <- answer{resp, time.Now()}
	}()
	var a answer
	select {
	case a = <-got:
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("Handle waited for an effect that ignores its context")
	}
	if !a.at.Before(deadline) {
		t.Errorf("Handle answered at %s, after the invocation's deadline %s", a.at.Format(time.StampMilli), deadline.Format(time.StampMilli))
	}
	if got, want := failed(a.resp), []string{"m-h1", "m-h2"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("batchItemFailures = %v, want %v (the finished conversations reported done)", got, want)
	}
	outs := outcomes(t, f.logs)
	if outs["m-h1"] != "timed_out" || outs["m-h2"] != "blocked" || outs["m-a1"] != "processed" {
		t.Errorf("outcomes = %v, want m-h1 timed_out, m-h2 blocked, the others processed", outs)
	}
	if v := f.sqs.visibility["rh-h1"]; v < 1 {
		t.Errorf("visibility of the hung message = %d s, want it hidden until its effect's lease ends", v)
	}
	if n, _ := f.ledger.FailedAttempt(context.Background(), "m-h1", 99); n != 2 {
		t.Errorf("failed attempts of the hung message = %d after this count, want 2 (the cut-off counted one)", n)
	}
	close(release)
	<-hungReturned
	time.Sleep(50 * time.Millisecond) // let the straggler finish its bookkeeping
	if len(f.sqs.sent) != 0 {
		t.Errorf("the straggler dead-lettered %d messages, want none (its message was reported failed)", len(f.sqs.sent))
	}

	// The mapping deletes m-a1 and m-b1; m-h1 comes back. The completed
	// effects run no more, whatever else comes back with them.
	f.clock.Advance(time.Hour)
	again := events.SQSEvent{Records: []events.SQSMessage{rec(t, env("h1", "hung"), 2), rec(t, env("a1", "A"), 2)}}
	if resp, _ := f.h.Handle(context.Background(), again); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery failed: %v", failed(resp))
	}
	if runs["a1"] != 1 || runs["b1"] != 1 || runs["h2"] != 0 {
		t.Errorf("runs = %v, want a1 and b1 once, h2 not yet", runs)
	}
	if runs["h1"] != 1 {
		t.Errorf("h1 ran %d times, want 1: its late success completed it", runs["h1"])
	}
}

// A custom effect that returned success never runs again: not after a
// duplicate invocation of the same batch past the first one's lease, nor a
// lost deletion (TestLostDeletion), nor a redrive (TestOnce).
func TestDuplicateInvocationSkipsCompletedEffects(t *testing.T) {
	f := newFixture(t, nil)
	runs := 0
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		if err := ev.Once(ctx, "sms", func(context.Context, string) error { runs++; return nil }); err != nil {
			return err
		}
		return errors.New("the handler fails after its effect")
	})
	e := env("dup", "A")
	for receive := 1; receive <= 3; receive++ {
		f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, receive)}})
		f.clock.Advance(time.Hour)
	}
	if runs != 1 {
		t.Errorf("the effect ran %d times over 3 invocations, want 1", runs)
	}
}

// An effect starts only when its whole budget fits before the work
// deadline: one that could be cut off mid-call (the target applies it, the
// reply is lost) waits for the next invocation, and that is no attempt.
func TestNoEffectStartsWithoutTimeToFinish(t *testing.T) {
	f := newFixture(t, func(c *worker.Config) { c.SafetyMargin, c.EffectTimeout = 2*time.Second, 3*time.Second })
	ran := map[string]int{}
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		return ev.Once(ctx, "charge", func(context.Context, string) error {
			ran[ev.EventID]++
			f.clock.Advance(4 * time.Second) // the first effect takes 4 of the 6 s
			return nil
		})
	})
	ctx, cancel := context.WithDeadline(context.Background(), f.clock.Now().Add(8*time.Second)) // 6 s of work
	defer cancel()
	resp, _ := f.h.Handle(ctx, batch(t, env("early", "A"), env("late", "A")))
	if ran["early"] != 1 || ran["late"] != 0 || strings.Join(failed(resp), ",") != "m-late" {
		t.Errorf("ran %v, failures %v; want the second effect not started (2 s left, it may take 3) and its message returned", ran, failed(resp))
	}
	if got := outcomes(t, f.logs)["m-late"]; got != "deadline" {
		t.Errorf("outcome = %q, want deadline", got)
	}
	if v, ok := f.sqs.visibility["rh-late"]; !ok || v != 0 {
		t.Errorf("visibility = %d (set %v), want 0: the next invocation takes it at once", v, ok)
	}
	if n, _ := f.ledger.FailedAttempt(context.Background(), "m-late", 99); n != 1 {
		t.Errorf("attempts = %d after this count, want 1: running out of time is no attempt", n)
	}
}

// Waiting on another worker's live lease is no attempt either.
func TestInFlightIsNoAttempt(t *testing.T) {
	f := newFixture(t, nil)
	e := env("inflight", "A")
	if _, err := f.ledger.Claim(context.Background(), fenceOf(t, e, 1), ledger.Key{Tenant: "acme", Event: e.Key, Effect: "charge"}, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		return ev.Once(ctx, "charge", func(context.Context, string) error { return nil })
	})
	f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 2)}})
	if n, _ := f.ledger.FailedAttempt(context.Background(), "m-inflight", 99); n != 1 {
		t.Errorf("attempts = %d after this count, want 1: the wait was not counted", n)
	}
}

// sentDaysAgo sets a record's SentTimestamp.
func sentDaysAgo(r events.SQSMessage, now time.Time, days float64) events.SQSMessage {
	r.Attributes["SentTimestamp"] = strconv.FormatInt(now.Add(-time.Duration(days*24)*time.Hour).UnixMilli(), 10)
	return r
}

// Nothing expires silently: a message that would still be failing or
// waiting when SQS's retention ends is dead-lettered with the reason first.
func TestExpiringMessagesAreDeadLettered(t *testing.T) {
	tests := []struct {
		name      string
		headAge   float64 // days since SentTimestamp
		tailAge   float64
		wantDLQ   []string
		wantRetry []string
	}{
		{"young: retried", 1, 1, nil, []string{"m-x1", "m-x2"}},
		{"failing head near its end: dead-lettered, the tail waits", 12.5, 1, []string{"m-x1"}, []string{"m-x2"}},
		{"waiting tail near its end: dead-lettered behind the head", 1, 12.5, []string{"m-x2"}, []string{"m-x1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *worker.Config) { c.Retry = worker.Retry{Base: time.Hour, Jitter: fixedJitter(0)} })
			f.reg.Handle(worker.Any, worker.Any, func(context.Context, *worker.Event) error { return errors.New("target answered 503") })
			now := f.clock.Now()
			ev := events.SQSEvent{Records: []events.SQSMessage{
				sentDaysAgo(rec(t, env("x1", "A"), 1), now, tt.headAge),
				sentDaysAgo(rec(t, env("x2", "A"), 1), now, tt.tailAge),
			}}
			resp, _ := f.h.Handle(context.Background(), ev)
			if got := failed(resp); strings.Join(got, ",") != strings.Join(tt.wantRetry, ",") {
				t.Errorf("failures = %v, want %v", got, tt.wantRetry)
			}
			var dlq []string
			for _, s := range f.sqs.sent {
				dlq = append(dlq, s.msg.Attributes[worker.AttrMessageID])
				reason := s.msg.Attributes[worker.AttrReason]
				if !strings.Contains(reason, "retention") || !strings.Contains(reason, "SQS deletes it at") {
					t.Errorf("reason = %q, want the retention and when SQS would delete it", reason)
				}
			}
			if strings.Join(dlq, ",") != strings.Join(tt.wantDLQ, ",") {
				t.Errorf("dead letters = %v, want %v", dlq, tt.wantDLQ)
			}
		})
	}
}

// SQS rejects a visibility timeout beyond 12 hours from the receive (the
// message would come back after the queue's default instead, using up an
// attempt early): a longer Retry-After is honoured up to that limit.
func TestLongRetryAfterStaysInsideSQSLimit(t *testing.T) {
	f := newFixture(t, nil)
	f.reg.Handle(worker.Any, worker.Any, func(context.Context, *worker.Event) error {
		f.clock.Advance(30 * time.Second) // the handler takes a while
		return worker.RetryAfter(errors.New("429"), 13*time.Hour)
	})
	f.h.Handle(context.Background(), batch(t, env("ra", "A")))
	v := f.sqs.visibility["rh-ra"]
	if limit := int32((12*time.Hour - 30*time.Second) / time.Second); v <= 0 || v > limit || v < limit-120 {
		t.Errorf("visibility = %d s, want just under the %d s SQS still allows", v, limit)
	}
}

// fakeQueues answers GetQueueAttributes with a queue's CreatedTimestamp.
type fakeQueues struct {
	created string
	calls   int
	// err, when set, is every read's answer (the read is counted).
	err error
}

func (q *fakeQueues) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	q.calls++
	if q.err != nil {
		return nil, q.err
	}
	if aws.ToString(in.QueueUrl) != testURL {
		return nil, errors.New("unexpected queue " + aws.ToString(in.QueueUrl))
	}
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"CreatedTimestamp": q.created}}, nil
}

// A tenant queue deleted and created again under its name may number its
// messages from the start: the ledger records its old incarnation wrote, with
// higher SequenceNumbers, must not fence the new queue's messages (they
// would fail as "fenced" forever).
func TestRecreatedQueueIsNotFencedByTheOldOne(t *testing.T) {
	f := newFixture(t, nil)
	q := &fakeQueues{created: "1700000000"}
	apply := func(ctx context.Context, ev *worker.Event) error {
		_, err := ev.ApplyIfNewer(ctx, "order:1", ev.ReceivedAt.UnixMilli(), []byte(ev.EventID))
		return err
	}
	cfg := func(c *worker.Config) { c.Queues = q; c.Ledger = f.ledger }
	old := newFixture(t, cfg)
	old.reg.Handle(worker.Any, worker.Any, apply)
	late := rec(t, env("old-900", "A"), 1)
	late.Attributes["SequenceNumber"] = "900"
	if resp, _ := old.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{late}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("old queue's message failed: %v", failed(resp))
	}

	q.created = "1800000000" // deleted and created again; a new instance reads it
	renewed := newFixture(t, cfg)
	renewed.reg.Handle(worker.Any, worker.Any, apply)
	first := rec(t, env("new-1", "A"), 1)
	first.Attributes["SequenceNumber"] = "1"
	resp, _ := renewed.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{first}})
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("the recreated queue's first message: failures %v, outcomes %v; want applied", failed(resp), outcomes(t, renewed.logs))
	}
	if q.calls != 2 {
		t.Errorf("GetQueueAttributes calls = %d, want 1 per instance and queue", q.calls)
	}
}

// An effect budget longer than the invocation's whole working time (a
// tenant's 60 s forward timeout under a 30 s function) must not stop every
// effect from ever starting: it starts in the first half of the window.
func TestEffectLongerThanTheInvocationStillRuns(t *testing.T) {
	f := newFixture(t, func(c *worker.Config) {
		c.SafetyMargin, c.EffectTimeout, c.Now = 2*time.Second, time.Minute, time.Now // real time passes
	})
	ran := map[string]int{}
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		return ev.Once(ctx, "charge", func(context.Context, string) error {
			ran[ev.EventID]++
			time.Sleep(time.Second)
			return nil
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second) // 4 s of work
	defer cancel()
	resp, _ := f.h.Handle(ctx, batch(t, env("long-1", "A"), env("long-2", "A"), env("long-3", "A")))
	if ran["long-1"] != 1 || ran["long-2"] != 1 || ran["long-3"] != 0 || strings.Join(failed(resp), ",") != "m-long-3" {
		t.Errorf("ran %v, failures %v; want the effects started in the first 2 s run and the third returned", ran, failed(resp))
	}
}

// flakyComplete fails the first n Complete writes (after applying the
// first, as a lost response does) with a transient error.
type flakyComplete struct {
	*ledger.Memory
	n, calls int
}

func (c *flakyComplete) Complete(ctx context.Context, l ledger.Lease) error {
	c.calls++
	if c.calls == 1 {
		if err := c.Memory.Complete(ctx, l); err != nil {
			return err
		}
	}
	if c.calls <= c.n {
		return errors.New("ThrottlingException: retry quota exceeded")
	}
	return c.Memory.Complete(ctx, l)
}

// A completion write that fails is retried within the clean-up budget: the
// effect ran, and a completion not recorded would run it again.
func TestCompletionWriteIsRetried(t *testing.T) {
	flaky := &flakyComplete{n: 3}
	f := newFixture(t, func(c *worker.Config) { flaky.Memory = c.Ledger.(*ledger.Memory); c.Ledger = flaky })
	runs := 0
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		return ev.Once(ctx, "sms", func(context.Context, string) error { runs++; return nil })
	})
	e := env("flaky-complete", "A")
	for receive := 1; receive <= 2; receive++ {
		if resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, receive)}}); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("receive %d failed: %v", receive, outcomes(t, f.logs))
		}
		f.clock.Advance(time.Hour)
	}
	if runs != 1 || flaky.calls != 4 {
		t.Errorf("effect ran %d times, %d Complete calls; want 1 run, completed on the 4th write", runs, flaky.calls)
	}
}

// A backlog behind a failing target, all of it near the end of its
// retention, drains at a batch per invocation: once one message failed
// again that near the end, the ones after it that are as near are
// dead-lettered without calling the target (each call could take its whole
// timeout, and the rest of the backlog would expire meanwhile).
func TestExpiringBacklogDrainsWithoutAttempts(t *testing.T) {
	f := newFixture(t, nil)
	calls := 0
	f.reg.Handle(worker.Any, worker.Any, func(context.Context, *worker.Event) error {
		calls++
		return errors.New("target answered 503")
	})
	now := f.clock.Now()
	var ev events.SQSEvent
	for i := range 5 {
		ev.Records = append(ev.Records, sentDaysAgo(rec(t, env(fmt.Sprint("old-", i), "A"), 1), now, 12.5))
	}
	ev.Records = append(ev.Records, sentDaysAgo(rec(t, env("young", "A"), 1), now, 1))
	resp, _ := f.h.Handle(context.Background(), ev)
	if calls != 2 || len(f.sqs.sent) != 5 || strings.Join(failed(resp), ",") != "m-young" {
		t.Errorf("%d target calls, %d dead letters, failures %v; want the head and the young one attempted, the 5 old dead-lettered, the young one retried",
			calls, len(f.sqs.sent), failed(resp))
	}
	if reason := f.sqs.sent[1].msg.Attributes[worker.AttrReason]; !strings.Contains(reason, "an earlier message of its conversation failed") {
		t.Errorf("reason = %q, want the earlier failure named", reason)
	}
}

// silentLedger is a ledger whose attempt counts never answer (DynamoDB
// throttled or unreachable): each call waits for its context.
type silentLedger struct{ *ledger.Memory }

func (silentLedger) FailedAttempt(ctx context.Context, _ string, _ int) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// However many conversations are stuck on a hung effect and however slow
// the ledger, Handle answers before the invocation's deadline (Lambda
// would otherwise time the invocation out and return the whole batch).
func TestCutOffAnswersBeforeTheDeadline(t *testing.T) {
	for _, stuck := range []int{1, 3, 8} {
		t.Run(fmt.Sprintf("%d stuck", stuck), func(t *testing.T) {
			f := newFixture(t, func(c *worker.Config) {
				c.SafetyMargin, c.FinishTimeout, c.EffectTimeout = time.Second, 300*time.Millisecond, 100*time.Millisecond
			})
			f.h = worker.New(worker.Config{
				Ledger: silentLedger{f.ledger}, Handlers: f.reg, DLQ: f.sqs, Visibility: f.sqs, Now: f.clock.Now,
				SafetyMargin: time.Second, FinishTimeout: 300 * time.Millisecond, EffectTimeout: 100 * time.Millisecond,
			})
			release := make(chan struct{})
			defer close(release)
			f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
				return ev.Once(ctx, "email", func(context.Context, string) error {
					if strings.HasPrefix(ev.Conversation, "hung") {
						<-release
					}
					return nil
				})
			})
			var envs []*envelope.Envelope
			for i := range stuck {
				envs = append(envs, env(fmt.Sprintf("h%d", i), fmt.Sprintf("hung%d", i)))
			}
			envs = append(envs, env("ok", "A"))
			ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
			defer cancel()
			deadline, _ := ctx.Deadline()
			resp, _ := f.h.Handle(ctx, batch(t, envs...))
			if now := time.Now(); !now.Before(deadline) {
				t.Errorf("Handle answered %s after the deadline", now.Sub(deadline))
			}
			if len(resp.BatchItemFailures) != stuck {
				t.Errorf("failures = %v, want the %d stuck messages", failed(resp), stuck)
			}
		})
	}
}

// The batch stops waiting for a stuck effect when the invocation's
// context ends, even before the cut-off its deadline sets (the simulation
// ends an invocation's time this way, on its own clock): the stuck message
// is reported failed, the others done.
func TestCutOffWhenTheContextEnds(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	release, okRan := make(chan struct{}), make(chan struct{})
	defer close(release)
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		if ev.Conversation != "hung" {
			defer close(okRan)
		}
		return ev.Once(ctx, "email", func(context.Context, string) error {
			if ev.Conversation == "hung" {
				// The other conversation's message has finished (its handler
				// returned; its answer takes no AWS call) before time runs out.
				<-okRan
				time.Sleep(100 * time.Millisecond)
				cancel()
				<-release // ignores its context
			}
			return nil
		})
	})
	answered := make(chan events.SQSEventResponse)
	go func() {
		resp, _ := f.h.Handle(ctx, batch(t, env("ok", "A"), env("h", "hung")))
		answered <- resp
	}()
	select {
	case resp := <-answered:
		if got := failed(resp); len(got) != 1 {
			t.Errorf("failures = %v, want the stuck message alone", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Handle still waits for the stuck effect after its context ended")
	}
}

// An effect taken over from an interrupted run of its own message knows it
// may be repeating (Event.Repeat), and that run counts as a failed attempt:
// at MaxAttempts the message is dead-lettered with the reason, never left
// to SQS's maxReceiveCount.
func TestInterruptedRunIsARepeatAndAnAttempt(t *testing.T) {
	f := newFixture(t, func(c *worker.Config) { c.MaxAttempts = 2 })
	e := env("interrupted", "A")
	var repeats []bool
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		return ev.Once(ctx, "charge", func(context.Context, string) error {
			repeats = append(repeats, ev.Repeat)
			return nil
		})
	})
	k := ledger.Key{Tenant: "acme", Event: e.Key, Effect: "charge"}
	for receive := 1; receive <= 2; receive++ {
		// The receive's worker claimed the effect and died while it ran.
		if _, err := f.ledger.Claim(context.Background(), fenceOf(t, e, receive), k, time.Second); err != nil {
			t.Fatalf("claim of receive %d: %v", receive, err)
		}
		f.clock.Advance(2 * time.Second)
	}
	// Receive 2's worker counted receive 1's interruption when it took over.
	if _, err := f.ledger.FailedAttempt(context.Background(), "m-interrupted", 1); err != nil {
		t.Fatal(err)
	}
	resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 3)}})
	if len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 1 {
		t.Fatalf("failures %v, dead letters %d; want the message dead-lettered", failed(resp), len(f.sqs.sent))
	}
	if reason := f.sqs.sent[0].msg.Attributes[worker.AttrReason]; !strings.Contains(reason, "interrupted") {
		t.Errorf("reason = %q, want the interrupted runs named", reason)
	}
	if len(repeats) != 0 {
		t.Errorf("the effect ran %d times, want none once its attempts were used up", len(repeats))
	}

	// One interruption: the effect runs again, told it may repeat; a fresh
	// message's effect is told it is not (groups run concurrently).
	f = newFixture(t, func(c *worker.Config) { c.MaxAttempts = 3 })
	var mu sync.Mutex
	repeat := map[string]bool{}
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		return ev.Once(ctx, "charge", func(context.Context, string) error {
			mu.Lock()
			defer mu.Unlock()
			repeat[ev.EventID] = ev.Repeat
			return nil
		})
	})
	e = env("interrupted-once", "A")
	k.Event = e.Key
	if _, err := f.ledger.Claim(context.Background(), fenceOf(t, e, 1), k, time.Second); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Second)
	fresh := env("fresh", "B")
	resp, _ = f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 2), rec(t, fresh, 1)}})
	if r, ok := repeat["interrupted-once"]; len(resp.BatchItemFailures) != 0 || !ok || !r || repeat["fresh"] {
		t.Errorf("failures %v, Repeat per event %v; want interrupted-once true, fresh false", failed(resp), repeat)
	}
}

// An effect interrupted again while its message nears the end of its queue
// retention: the message is dead-lettered with ErrExpiring instead of run
// once more, since every invocation that runs it may end before the worker
// decides anything, and SQS would then delete it without a trace (make
// simulate rapid seed 37311842: attempts not countable, the target timing
// every invocation out).
//
// The forward's claim, whose success the deletion records, counts as
// interrupted only when its lease ended inside the margin, where a success
// is recorded at once (TestLostDeletionNearRetentionEndIsNotDeadLettered).
func TestInterruptedNearRetentionEndIsDeadLettered(t *testing.T) {
	for _, forward := range []bool{false, true} {
		f := newFixture(t, func(c *worker.Config) { c.MaxAttempts = 5 })
		e := env(fmt.Sprintf("interrupted-late-%v", forward), "A")
		effect, runs := oneEffect(f, forward)
		if forward {
			effect = ledger.EventEffect
		}
		k := ledger.Key{Tenant: "acme", Event: e.Key, Effect: effect}
		fence := fenceOf(t, e, 1)
		fence.Immediate = !forward
		if _, err := f.ledger.Claim(context.Background(), fence, k, time.Second); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Second)
		r := rec(t, e, 2)
		sent := f.clock.Now().Add(-worker.DefaultQueueRetention + worker.DefaultExpiryMargin/2)
		r.Attributes["SentTimestamp"] = strconv.FormatInt(sent.UnixMilli(), 10)
		resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
		if len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 1 || len(runs()) != 0 {
			t.Fatalf("%s: failures %v, dead letters %d, runs %d; want it dead-lettered, not run again", effect, failed(resp), len(f.sqs.sent), len(runs()))
		}
		if reason := f.sqs.sent[0].msg.Attributes[worker.AttrReason]; !strings.Contains(reason, worker.ErrExpiring.Error()) || !strings.Contains(reason, "interrupted again") {
			t.Errorf("%s: reason = %q, want the retention's end and the interruption named", effect, reason)
		}
	}
}

// A queue deleted and created again while a warm instance still holds its
// old incarnation (read less than a minute before): a copy of a done event
// in the new queue, numbered after the old one's message, must not be taken
// for done by the old queue's unfinished claim, whatever the timing of the
// cached read. The queue is asked on that path, and the copy runs under the
// new incarnation.
func TestRecreatedQueueWithinTheCacheDoesNotLoseTheEvent(t *testing.T) {
	for _, deadLetter := range []bool{false, true} {
		q := &fakeQueues{created: "1700000000"}
		f := newFixture(t, func(c *worker.Config) { c.Queues = q })
		effect, runs := oneEffect(f, true)
		e := env(fmt.Sprintf("requeued-%v", deadLetter), "Q")
		// Both sent at once: the old queue's value, read for the first,
		// holds for the second too (as if a read of the queue had still
		// returned the deleted queue's value after the new queue's first
		// message was sent), so only requeued's read tells them apart.
		sent := strconv.FormatInt(f.clock.Now().UnixMilli(), 10)
		old := rec(t, e, 1)
		old.Attributes["SequenceNumber"], old.Attributes["SentTimestamp"] = "5", sent
		if resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{old}}); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("old queue's message failed: %v", failed(resp))
		}
		q.created = "1700000030" // deleted and created again: the cache still holds the old one
		again := recAs(t, "m-"+e.EventID+"-new", reenqueued(e), 1)
		again.Attributes["SequenceNumber"], again.Attributes["SentTimestamp"] = "10", sent
		if deadLetter { // behind an expiring message: dead-lettered before its claim
			again.Attributes["SentTimestamp"] = strconv.FormatInt(f.clock.Now().Add(-13*24*time.Hour).UnixMilli(), 10)
			f.reg.Handle("stripe", "blocked.type", func(context.Context, *worker.Event) error { return errors.New("target answered 503") })
			be := env(fmt.Sprintf("blocker-%v", deadLetter), "Q")
			be.Type = "blocked.type"
			blocker := rec(t, be, 1)
			blocker.Attributes["SequenceNumber"], blocker.Attributes["SentTimestamp"] = "9", again.Attributes["SentTimestamp"]
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{blocker, again}})
			if got := outcomes(t, f.logs)[again.MessageId]; got == "skipped_duplicate" || len(resp.BatchItemFailures) != 1 {
				t.Fatalf("dead-lettered copy in the new queue: outcome %q, failures %v; want it taken again, not deleted", got, failed(resp))
			}
			again.Attributes["SentTimestamp"] = sent
		} else {
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{again}})
			if got := outcomes(t, f.logs)[again.MessageId]; got == "skipped_duplicate" || len(resp.BatchItemFailures) != 1 {
				t.Fatalf("copy in the new queue: outcome %q, failures %v; want it taken again, not deleted", got, failed(resp))
			}
		}
		f.clock.Advance(time.Hour) // the old claim's lease ends
		again.Attributes["ApproximateReceiveCount"] = "2"
		if resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{again}}); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("copy in the new queue, taken again: failures %v, outcomes %v\n%s", failed(resp), outcomes(t, f.logs), f.logs.String())
		}
		if keys := runs(); len(keys) != 2 || keys[0] != keys[1] {
			t.Errorf("%s ran with keys %v, want twice (once per queue) with one key", effect, keys)
		}
	}
}

// A read of a queue being deleted may still return its old CreatedTimestamp
// for up to 60 s, and the queue may be created again right after: the value
// read then must not label a message sent after the read. The new queue's
// message is labelled with the new incarnation, so the event's later copy
// in the new queue counts its claim done once it was deleted (make simulate
// SEED=15 ran the forward again), and a batch reads the queue once.
func TestStaleQueueReadLabelsNoLaterMessage(t *testing.T) {
	q := &fakeQueues{created: "1700000000"}
	f := newFixture(t, func(c *worker.Config) { c.Queues = q })
	_, runs := oneEffect(f, true)
	handle := func(recs ...events.SQSMessage) events.SQSEventResponse {
		t.Helper()
		resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: recs})
		return resp
	}
	// The old queue's last message, read while the queue is being deleted.
	last := sentAt(rec(t, env("stale-0", "S"), 1), f.clock.Now())
	last.Attributes["SequenceNumber"] = "900"
	if resp := handle(last); len(resp.BatchItemFailures) != 0 || q.calls != 1 {
		t.Fatalf("the old queue's message: failures %v, %d reads; want done, 1 read", failed(resp), q.calls)
	}
	q.created = "1700000061" // created again once SQS allows it
	f.clock.Advance(30 * time.Second)
	e := env("stale-1", "S")
	first, other := sentAt(rec(t, e, 1), f.clock.Now()), sentAt(rec(t, env("stale-2", "T"), 1), f.clock.Now())
	first.Attributes["SequenceNumber"], other.Attributes["SequenceNumber"] = "1", "2"
	if resp := handle(first, other); len(resp.BatchItemFailures) != 0 || q.calls != 2 {
		t.Fatalf("the new queue's first batch: failures %v, %d reads; want done, read again once (sent after the read)", failed(resp), q.calls)
	}
	f.clock.Advance(time.Hour) // every lease has ended
	again := sentAt(recAs(t, "m-stale-1-again", reenqueued(e), 1), f.clock.Now())
	again.Attributes["SequenceNumber"] = "3"
	if resp := handle(again); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the event's later copy: failures %v", failed(resp))
	}
	if got := outcomes(t, f.logs)[again.MessageId]; got != "skipped_duplicate" || len(runs()) != 3 {
		t.Errorf("the event's later copy in the new queue: outcome %q, %d forwards; want skipped_duplicate, 3 (one per event)", got, len(runs()))
	}
}

// firstPostFails answers 503 to the first post of each idempotency key, and
// records the posts it accepted.
type firstPostFails struct {
	mu       sync.Mutex
	seen     map[string]bool
	accepted []string
}

func (p *firstPostFails) Post(_ context.Context, r forward.Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.seen[r.IdempotencyKey] {
		p.seen[r.IdempotencyKey] = true
		return forward.Classify(503, nil, nil, time.Now())
	}
	p.accepted = append(p.accepted, r.IdempotencyKey)
	return nil
}

// A message of a queue since deleted (`tenant.sh remove --force`), received
// before the deletion and handled after a queue of the same name exists
// again — a delayed invocation on a cold instance, or on a warm one whose
// cache a read after the re-creation filled — is not labelled with the new
// queue's incarnation: it was sent before that queue was created. Its failed
// forward must neither fence nor complete the event's copy in the new queue
// (with the new queue's label the copy, numbered from the start, was
// superseded by the old message's higher SequenceNumber: neither applied nor
// dead-lettered).
func TestOldQueueMessageHandledAfterTheRecreation(t *testing.T) {
	q := &fakeQueues{}
	onLedgers(t, func(c *worker.Config) { c.Queues = q }, func(t *testing.T, f *fixture, _ records) {
		now := f.clock.Now()
		// Created again 10 minutes ago.
		q.created, q.calls = strconv.FormatInt(now.Add(-10*time.Minute).Unix(), 10), 0
		p := &firstPostFails{seen: map[string]bool{}}
		f.reg.Handle(worker.Any, worker.Any, worker.Forward(fakeOutbound{out: tenant.Outbound{TargetURL: "https://acme.example/hooks", Secrets: []string{"whsec_c2VjcmV0"}}}, p))
		handle := func(recs ...events.SQSMessage) events.SQSEventResponse {
			t.Helper()
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: recs})
			return resp
		}
		e1, e2 := env("gone-1", "G1"), env("gone-2", "G2")
		// The old queue's messages: the first read of the queue (a cold
		// instance), then the cache that read filled. Their target answers 503.
		old1 := sentAt(recAs(t, "m-gone-1-old", e1, 1), now.Add(-20*time.Minute))
		old2 := sentAt(recAs(t, "m-gone-2-old", e2, 1), now.Add(-25*time.Minute))
		old1.Attributes["SequenceNumber"], old2.Attributes["SequenceNumber"] = "900", "901"
		for _, m := range []events.SQSMessage{old1, old2} {
			if resp := handle(m); len(resp.BatchItemFailures) != 1 {
				t.Fatalf("old queue's message %s: failures %v, want it retried (its queue is gone)", m.MessageId, failed(resp))
			}
		}
		if q.calls != 1 {
			t.Errorf("%d queue reads, want 1 (the second message used the cache)", q.calls)
		}
		// The senders' retries, enqueued in the new queue, numbered from the start.
		f.clock.Advance(time.Minute)
		new1 := sentAt(recAs(t, "m-gone-1-new", reenqueued(e1), 1), f.clock.Now())
		new2 := sentAt(recAs(t, "m-gone-2-new", reenqueued(e2), 1), f.clock.Now())
		new1.Attributes["SequenceNumber"], new2.Attributes["SequenceNumber"] = "1", "2"
		resp := handle(new1, new2)
		outs := outcomes(t, f.logs)
		if len(resp.BatchItemFailures) != 0 || outs[new1.MessageId] != "processed" || outs[new2.MessageId] != "processed" || len(p.accepted) != 2 {
			t.Errorf("the events' copies in the new queue: failures %v, outcomes %s %s, %d forwards accepted; want both processed and forwarded",
				failed(resp), outs[new1.MessageId], outs[new2.MessageId], len(p.accepted))
		}
	})
}

// An event whose forward completed in a queue deleted since (its message
// failed after it, and was lost with the queue) is done again in the new
// queue by the sender's next copy (the forward skipped, the rest run). A
// later copy in the new queue that fails (a hand re-send of its dead letter,
// its handler refusing) finds the event done and is deleted, not
// dead-lettered: the record the old queue completed is taken into the new
// queue's series by the copy that found it (make simulate SEED=3 gave a done
// event a dead letter: tokens of another incarnation never compare).
func TestDoneInTheNewQueueIsNotDeadLetteredByALaterCopy(t *testing.T) {
	q := &fakeQueues{}
	onLedgers(t, func(c *worker.Config) { c.Queues = q }, func(t *testing.T, f *fixture, store records) {
		now := f.clock.Now()
		q.created = strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)
		p := &fakePoster{}
		forwardTo := worker.Forward(fakeOutbound{out: tenant.Outbound{TargetURL: "https://acme.example/hooks", Secrets: []string{"whsec_c2VjcmV0"}}}, p)
		var charges []string
		failCharge, refuse := true, ""
		f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			if err := forwardTo(ctx, ev); err != nil {
				return err
			}
			if ev.MessageID == refuse {
				return worker.Permanent(errors.New("handler refuses the copy"))
			}
			return ev.Once(ctx, "charge", func(_ context.Context, key string) error {
				if failCharge {
					return errors.New("charge target answered 503")
				}
				charges = append(charges, key)
				return nil
			})
		})
		handle := func(r events.SQSMessage) events.SQSEventResponse {
			t.Helper()
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
			return resp
		}
		e := env("adopted-"+t.Name()[strings.LastIndexByte(t.Name(), '/')+1:], "AD")
		old := sentAt(recAs(t, "m-"+e.EventID+"-old", e, 1), now.Add(-30*time.Minute))
		old.Attributes["SequenceNumber"] = "900"
		if resp := handle(old); len(resp.BatchItemFailures) != 1 {
			t.Fatalf("old queue's message: failures %v, want it retried (its charge failed)", failed(resp))
		}
		k := ledger.Key{Tenant: e.Tenant, Event: e.Key, Effect: ledger.EventEffect}
		if r, err := store.Record(context.Background(), k); err != nil || r.Status != ledger.StatusCompleted {
			t.Fatalf("event record after the old message = %+v, %v; want its forward COMPLETED", r, err)
		}
		// Deleted with its message and created again; SequenceNumbers restart.
		f.clock.Advance(time.Hour)
		q.created, failCharge = strconv.FormatInt(f.clock.Now().Add(-time.Minute).Unix(), 10), false
		first := sentAt(recAs(t, "m-"+e.EventID+"-new", reenqueued(e), 1), f.clock.Now())
		first.Attributes["SequenceNumber"] = "5"
		if resp := handle(first); len(resp.BatchItemFailures) != 0 || len(p.reqs) != 1 || len(charges) != 1 {
			t.Fatalf("the new queue's copy: failures %v, %d forwards, %d charges; want done, 1 forward (the old one), 1 charge", failed(resp), len(p.reqs), len(charges))
		}
		later := sentAt(recAs(t, "m-"+e.EventID+"-by-hand", reenqueued(e), 1), f.clock.Now())
		later.Attributes["SequenceNumber"], refuse = "9", later.MessageId
		if resp := handle(later); len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 0 {
			t.Fatalf("a later copy that fails: failures %v, %d dead letters; want it deleted, its event done", failed(resp), len(f.sqs.sent))
		}
		if got := outcomes(t, f.logs)[later.MessageId]; got != "skipped_duplicate" {
			t.Errorf("a later copy that fails: outcome %q, want skipped_duplicate", got)
		}
		if r, _ := store.Record(context.Background(), k); r.Dead() {
			t.Errorf("event record after the later copy = %+v, want it not dead-lettered", r)
		}
	})
}

// A queue deleted and created again may number its messages from the start:
// a message of the new queue can carry the SequenceNumber an old message
// had. Its claim takes over that message's record (another incarnation's is
// never done) but must not take it for its own interrupted receive: no
// attempt is counted, and the effect is not reported a repeat of its own
// (make simulate SEED=1 counted an attempt of a message that only waited for
// its rate).
func TestAnotherIncarnationsSequenceIsNotItsOwnReceive(t *testing.T) {
	q := &fakeQueues{}
	onLedgers(t, func(c *worker.Config) { c.Queues = q }, func(t *testing.T, f *fixture, store records) {
		now := f.clock.Now()
		q.created = strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)
		_, runs := oneEffect(f, true)
		e := env("renumbered-"+t.Name()[strings.LastIndexByte(t.Name(), '/')+1:], "RN")
		old := sentAt(recAs(t, "m-"+e.EventID+"-old", e, 1), now.Add(-30*time.Minute))
		old.Attributes["SequenceNumber"] = "1002"
		if resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{old}}); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("old queue's message: failures %v", failed(resp))
		}
		// Deleted (the message's deletion lost with it) and created again;
		// the sender's retry gets the same SequenceNumber.
		f.clock.Advance(time.Hour)
		q.created = strconv.FormatInt(f.clock.Now().Add(-time.Minute).Unix(), 10)
		again := sentAt(recAs(t, "m-"+e.EventID+"-new", reenqueued(e), 1), f.clock.Now())
		again.Attributes["SequenceNumber"] = "1002"
		if resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{again}}); len(resp.BatchItemFailures) != 0 || len(runs()) != 2 {
			t.Fatalf("the new queue's copy: failures %v, %d forwards; want done, forwarded again (once per queue)", failed(resp), len(runs()))
		}
		attempts, ok := store.(interface {
			Attempts(ctx context.Context, messageID string) (int, error)
		})
		if !ok {
			t.Fatalf("%T reads no attempts", store)
		}
		if n, err := attempts.Attempts(context.Background(), again.MessageId); err != nil || n != 0 {
			t.Errorf("attempts of the new queue's copy = %d, %v; want 0 (the old message's record is not its own receive)", n, err)
		}
	})
}
