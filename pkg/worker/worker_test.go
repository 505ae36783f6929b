package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/logtest"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
	"github.com/hookpack/hookpack/pkg/worker"
)

func TestPerGroupSkip(t *testing.T) {
	transient := errors.New("target answered 503")
	tests := []struct {
		name        string
		errs        map[string]error // event id → effect error
		wantFailed  []string
		wantRan     []string // in order, per group
		wantVis     map[string]int32
		wantDLQ     []string
		wantOutcome map[string]string
	}{
		{
			name:       "transient failure holds back the rest of its group only",
			errs:       map[string]error{"a2": transient},
			wantFailed: []string{"m-a2", "m-a3"},
			wantRan:    []string{"a1", "a2", "b1", "b2"},
			wantVis:    map[string]int32{"rh-a2": 2, "rh-a3": 2},
			wantOutcome: map[string]string{
				"m-a1": "processed", "m-a2": "retried", "m-a3": "blocked", "m-b1": "processed", "m-b2": "processed",
			},
		},
		{
			name:       "failure of a group's first message holds back the whole group",
			errs:       map[string]error{"a1": transient},
			wantFailed: []string{"m-a1", "m-a2", "m-a3"},
			wantRan:    []string{"a1", "b1", "b2"},
			wantVis:    map[string]int32{"rh-a1": 2, "rh-a2": 2, "rh-a3": 2},
		},
		{
			name:        "permanent failure is dead-lettered and its conversation continues",
			errs:        map[string]error{"a2": worker.Permanent(errors.New("card declined for good"))},
			wantRan:     []string{"a1", "a2", "a3", "b1", "b2"},
			wantVis:     map[string]int32{},
			wantDLQ:     []string{"m-a2"},
			wantOutcome: map[string]string{"m-a2": "dead_lettered", "m-a3": "processed"},
		},
		{
			name:        "fenced message and its followers keep their visibility",
			errs:        map[string]error{"b1": fmt.Errorf("complete: %w", ledger.ErrFenced)},
			wantFailed:  []string{"m-b1", "m-b2"},
			wantRan:     []string{"a1", "a2", "a3", "b1"},
			wantVis:     map[string]int32{},
			wantOutcome: map[string]string{"m-b1": "fenced", "m-b2": "blocked"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			var mu sync.Mutex
			var ran []string
			f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
				mu.Lock()
				ran = append(ran, ev.EventID)
				mu.Unlock()
				return ev.Once(ctx, "effect", func(context.Context, string) error { return tt.errs[ev.EventID] })
			})
			ev := batch(t, env("a1", "A"), env("b1", "B"), env("a2", "A"), env("a3", "A"), env("b2", "B"))
			resp, err := f.h.Handle(context.Background(), ev)
			if err != nil {
				t.Fatalf("Handle() error = %v, want nil (never fail the whole batch)", err)
			}
			if got := failed(resp); !slices.Equal(got, tt.wantFailed) {
				t.Errorf("batchItemFailures = %v, want %v", got, tt.wantFailed)
			}
			// Order within each group; groups interleave freely.
			for _, g := range []string{"a", "b"} {
				var got, want []string
				for _, id := range ran {
					if strings.HasPrefix(id, g) {
						got = append(got, id)
					}
				}
				for _, id := range tt.wantRan {
					if strings.HasPrefix(id, g) {
						want = append(want, id)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("group %s ran %v, want %v", g, got, want)
				}
			}
			if fmt.Sprint(f.sqs.visibility) != fmt.Sprint(tt.wantVis) {
				t.Errorf("visibility changes = %v, want %v", f.sqs.visibility, tt.wantVis)
			}
			var dlq []string
			for _, s := range f.sqs.sent {
				dlq = append(dlq, s.msg.Attributes[worker.AttrMessageID])
			}
			if !slices.Equal(dlq, tt.wantDLQ) {
				t.Errorf("dead letters = %v, want %v", dlq, tt.wantDLQ)
			}
			got := outcomes(t, f.logs)
			if len(got) != len(ev.Records) {
				t.Errorf("%d log lines, want one per message (%d)", len(got), len(ev.Records))
			}
			for id, want := range tt.wantOutcome {
				if got[id] != want {
					t.Errorf("outcome of %s = %q, want %q", id, got[id], want)
				}
			}
		})
	}
}

func TestGroupsRunConcurrentlyEachInOrder(t *testing.T) {
	f := newFixture(t, nil)
	const groups = 3
	arrived := make(chan struct{}, groups)
	release := make(chan struct{})
	var mu sync.Mutex
	active := map[string]int{}
	var seen []string
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		mu.Lock()
		active[ev.Conversation]++
		if active[ev.Conversation] > 1 {
			t.Errorf("two messages of group %s ran at once", ev.Conversation)
		}
		seen = append(seen, ev.EventID)
		mu.Unlock()
		if strings.HasSuffix(ev.EventID, "-1") {
			// Every group's first message waits here until all groups have
			// arrived: this only finishes when groups run concurrently.
			arrived <- struct{}{}
			select {
			case <-release:
			case <-time.After(5 * time.Second):
				t.Error("groups did not run concurrently")
			}
		}
		mu.Lock()
		active[ev.Conversation]--
		mu.Unlock()
		return nil
	})
	go func() {
		for range groups {
			<-arrived
		}
		close(release)
	}()
	var envs []*envelope.Envelope
	for i := 1; i <= 2; i++ {
		for g := range groups {
			envs = append(envs, env(fmt.Sprintf("g%d-%d", g, i), fmt.Sprintf("G%d", g)))
		}
	}
	resp, _ := f.h.Handle(context.Background(), batch(t, envs...))
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("batchItemFailures = %v, want none", failed(resp))
	}
	for g := range groups {
		first, second := slices.Index(seen, fmt.Sprintf("g%d-1", g)), slices.Index(seen, fmt.Sprintf("g%d-2", g))
		if first < 0 || second < 0 || first > second {
			t.Errorf("group G%d ran in order %v", g, seen)
		}
	}
}

func TestWorkDeadline(t *testing.T) {
	f := newFixture(t, func(c *worker.Config) { c.SafetyMargin = 2 * time.Second })
	start := f.clock.Now()
	// Lambda's deadline 10 s from now: work stops at 8 s.
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(10*time.Second))
	defer cancel()
	var deadlines []time.Time
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		d, _ := ctx.Deadline()
		deadlines = append(deadlines, d)
		f.clock.Advance(5 * time.Second) // each message takes 5 s
		return nil
	})
	resp, _ := f.h.Handle(ctx, batch(t, env("1", "A"), env("2", "A"), env("3", "A"), env("4", "A")))
	// 1 starts at 0 s, 2 at 5 s; 3 would start at 10 s, past the 8 s work
	// deadline: 3 and 4 go back to the queue, visible at once.
	if got, want := failed(resp), []string{"m-3", "m-4"}; !slices.Equal(got, want) {
		t.Errorf("batchItemFailures = %v, want %v", got, want)
	}
	if len(deadlines) != 2 || !deadlines[0].Equal(start.Add(8*time.Second)) {
		t.Errorf("handler context deadlines = %v, want two at start+8s", deadlines)
	}
	if v, ok := f.sqs.visibility["rh-3"]; !ok || v != 0 {
		t.Errorf("visibility of the unstarted message = %d (set %v), want 0 (redeliver at once)", v, ok)
	}
	if got := outcomes(t, f.logs); got["m-3"] != "deadline" || got["m-4"] != "blocked" {
		t.Errorf("outcomes = %v, want m-3 deadline and m-4 blocked", got)
	}

	t.Run("no time left at all", func(t *testing.T) {
		f := newFixture(t, func(c *worker.Config) { c.SafetyMargin = 5 * time.Second })
		ctx, cancel := context.WithDeadline(context.Background(), f.clock.Now().Add(3*time.Second))
		defer cancel()
		f.reg.Handle(worker.Any, worker.Any, func(context.Context, *worker.Event) error {
			t.Error("a handler started inside the safety margin")
			return nil
		})
		resp, _ := f.h.Handle(ctx, batch(t, env("1", "A"), env("2", "B")))
		if got := failed(resp); len(got) != 2 {
			t.Errorf("batchItemFailures = %v, want both messages", got)
		}
	})
}

func TestRetryDelay(t *testing.T) {
	tests := []struct {
		name       string
		r          worker.Retry
		attempt    int
		retryAfter time.Duration
		want       time.Duration
	}{
		{"first attempt, no jitter: half the base", worker.Retry{Base: 4 * time.Second, Jitter: fixedJitter(0)}, 1, 0, 2 * time.Second},
		{"first attempt, full jitter: the base", worker.Retry{Base: 4 * time.Second, Jitter: fixedJitter(0.999)}, 1, 0, 4 * time.Second},
		{"doubles per attempt", worker.Retry{Base: 4 * time.Second, Jitter: fixedJitter(0)}, 4, 0, 16 * time.Second},
		{"jitter in between, rounded up to seconds", worker.Retry{Base: 5 * time.Second, Jitter: fixedJitter(0.5)}, 1, 0, 4 * time.Second},
		{"default base", worker.Retry{Jitter: fixedJitter(0)}, 2, 0, worker.DefaultRetryBase},
		{"Retry-After wins when longer", worker.Retry{Base: 4 * time.Second, Jitter: fixedJitter(0)}, 1, 90 * time.Second, 90 * time.Second},
		{"Retry-After shorter than backoff", worker.Retry{Base: 4 * time.Second, Jitter: fixedJitter(0)}, 6, time.Second, 64 * time.Second},
		{"capped by Max", worker.Retry{Base: time.Minute, Max: 10 * time.Minute, Jitter: fixedJitter(0.999)}, 20, 0, 10 * time.Minute},
		{"Retry-After capped by Max", worker.Retry{Base: time.Second, Max: time.Hour, Jitter: fixedJitter(0)}, 1, 48 * time.Hour, time.Hour},
		{"never beyond 12 h", worker.Retry{Base: time.Hour, Max: 100 * time.Hour, Jitter: fixedJitter(0.999)}, 1000, 20 * time.Hour, 12 * time.Hour},
		{"huge attempt counts do not overflow", worker.Retry{Base: time.Hour, Jitter: fixedJitter(0)}, 1 << 30, 0, 6 * time.Hour},
		{"negative base: no delay", worker.Retry{Base: -1, Jitter: fixedJitter(0.7)}, 5, 0, 0},
		{"attempt 0 counts as 1", worker.Retry{Base: 4 * time.Second, Jitter: fixedJitter(0)}, 0, 0, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Delay(tt.attempt, tt.retryAfter); got != tt.want {
				t.Errorf("Delay(%d, %s) = %s, want %s", tt.attempt, tt.retryAfter, got, tt.want)
			}
		})
	}
	t.Run("jitter spreads retries", func(t *testing.T) {
		r := worker.Retry{Base: 64 * time.Second}
		seen := map[time.Duration]bool{}
		for range 200 {
			d := r.Delay(1, 0)
			if d < 32*time.Second || d > 64*time.Second {
				t.Fatalf("Delay(1) = %s, want within [32s, 64s]", d)
			}
			seen[d] = true
		}
		if len(seen) < 5 {
			t.Errorf("200 delays took only %d distinct values", len(seen))
		}
	})
}

func TestTransientRetryUsesAttemptsAndRetryAfter(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		failed   int // attempts that failed before
		receives int
		want     int32
	}{
		{"backoff from the attempt count", errors.New("503"), 2, 3, 8},
		{"receives without attempts are no attempts", errors.New("503"), 0, 9, 2},
		{"Retry-After longer than backoff", worker.RetryAfter(errors.New("429"), 10*time.Minute), 0, 1, 600},
		{"Retry-After inside a joined error", errors.Join(errors.New("x"), worker.RetryAfter(errors.New("429"), time.Minute)), 0, 1, 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.reg.Handle(worker.Any, worker.Any, func(context.Context, *worker.Event) error { return tt.err })
			for i := range tt.failed {
				f.ledger.FailedAttempt(context.Background(), "m-1", i+1)
			}
			r := rec(t, env("1", "A"), tt.receives)
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
			if len(resp.BatchItemFailures) != 1 || f.sqs.visibility["rh-1"] != tt.want {
				t.Errorf("failures %v, visibility %d; want the message failed with visibility %d", failed(resp), f.sqs.visibility["rh-1"], tt.want)
			}
		})
	}
}

func TestMaxAttempts(t *testing.T) {
	f := newFixture(t, func(c *worker.Config) { c.MaxAttempts = 5 })
	f.reg.Handle(worker.Any, worker.Any, func(context.Context, *worker.Event) error {
		return errors.New("target answered 503")
	})
	for i := range 3 {
		f.ledger.FailedAttempt(context.Background(), "m-1", i+1)
	}
	for i := range 4 {
		f.ledger.FailedAttempt(context.Background(), "m-2", i+1)
	}
	resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, env("1", "A"), 4), rec(t, env("2", "B"), 5)}})
	if got := failed(resp); !slices.Equal(got, []string{"m-1"}) {
		t.Errorf("failures = %v, want only the 4th attempt retried", got)
	}
	if len(f.sqs.sent) != 1 || f.sqs.sent[0].msg.Attributes[worker.AttrReason] != "gave up after 5 attempts: target answered 503" {
		t.Errorf("dead letters = %+v, want the 5th attempt with its last error", f.sqs.sent)
	}
}

func TestDeadLetter(t *testing.T) {
	poison := rec(t, env("p", "A"), 4)
	poison.Body = `{"not":"an envelope"}`
	poison.Attributes["MessageGroupId"] = "conv-A"
	tests := []struct {
		name       string
		record     events.SQSMessage
		handler    worker.HandlerFunc
		sendErr    error
		wantReason string
		wantFailed bool
	}{
		{"invalid envelope", poison, nil, nil, "invalid envelope", false},
		{"handler's permanent error", rec(t, env("p", "A"), 2), func(context.Context, *worker.Event) error {
			return worker.Permanent(errors.New("customer deleted"))
		}, nil, "customer deleted", false},
		{"no handler for the type", rec(t, env("p", "A"), 1), nil, nil, "no handler for provider and event type: stripe/invoice.paid", false},
		{"reason SQS would refuse is cleaned", rec(t, env("p", "A"), 1), func(context.Context, *worker.Event) error {
			return worker.Permanent(errors.New("bad\x00byte \xff" + strings.Repeat("x", 600)))
		}, nil, "bad?byte xxx", false},
		{"DLQ unreachable: retried instead", rec(t, env("p", "A"), 1), func(context.Context, *worker.Event) error {
			return worker.Permanent(errors.New("customer deleted"))
		}, errors.New("sqs down"), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.sqs.sendErr = tt.sendErr
			if tt.handler != nil {
				f.reg.Handle("stripe", worker.Any, tt.handler)
			}
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{tt.record}})
			if got := len(resp.BatchItemFailures) == 1; got != tt.wantFailed {
				t.Fatalf("failures = %v, want failed=%v", failed(resp), tt.wantFailed)
			}
			if tt.wantFailed {
				if _, ok := f.sqs.visibility[tt.record.ReceiptHandle]; !ok {
					t.Error("a message that could not be dead-lettered got no backoff")
				}
				return
			}
			if len(f.sqs.sent) != 1 {
				t.Fatalf("%d dead letters, want 1", len(f.sqs.sent))
			}
			s := f.sqs.sent[0]
			a := s.msg.Attributes
			if s.url != testDLQ || s.msg.Body == nil || string(s.msg.Body) != tt.record.Body {
				t.Errorf("dead letter to %s with body %q, want %s with the original body", s.url, s.msg.Body, testDLQ)
			}
			if !strings.Contains(a[worker.AttrReason], tt.wantReason) ||
				a[worker.AttrAttempts] != "1" || // the first counted attempt, whatever the receive count
				a[worker.AttrGroupID] != tt.record.Attributes["MessageGroupId"] ||
				a[worker.AttrMessageID] != tt.record.MessageId || a[worker.AttrFailedAt] == "" {
				t.Errorf("dead letter attributes = %v", a)
			}
			if s.msg.GroupID != tt.record.Attributes["MessageGroupId"] || s.msg.DeduplicationID != webhook.DeduplicationID("dlq#"+tt.record.MessageId) {
				t.Errorf("dead letter group %q dedup %q, want the original group and a dedup id from the message id", s.msg.GroupID, s.msg.DeduplicationID)
			}
		})
	}
}

// oneEffect gives every event on f one effect: the forward, to a fake
// poster, or else the custom effect "charge". It returns the effect's name
// and a function returning the idempotency keys of its runs so far (the
// custom effect's, then the forward's requests').
func oneEffect(f *fixture, forward bool) (effect string, runs func() []string) {
	var keys []string
	p := &fakePoster{}
	if forward {
		effect = worker.ForwardEffect
		f.reg.Handle(worker.Any, worker.Any, worker.Forward(fakeOutbound{out: tenant.Outbound{TargetURL: "https://acme.example/hooks", Secrets: []string{"whsec_c2VjcmV0"}}}, p))
	} else {
		effect = "charge"
		f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			return ev.Once(ctx, effect, func(_ context.Context, key string) error {
				keys = append(keys, key)
				return nil
			})
		})
	}
	return effect, func() []string {
		p.mu.Lock()
		defer p.mu.Unlock()
		out := slices.Clone(keys)
		for _, r := range p.reqs {
			out = append(out, r.IdempotencyKey)
		}
		return out
	}
}

// A message whose handler succeeded but whose deletion was lost comes back
// with the same SequenceNumber after its visibility timeout. A custom effect
// (Event.Once) wrote its completion as it ran, so the redelivery skips it;
// the forward leaves its completion to the deletion, so it is sent again
// with the same Idempotency-Key (its receiver absorbs it) unless
// CompleteEffects asks for the write.
func TestLostDeletion(t *testing.T) {
	tests := []struct {
		name            string
		forward         bool
		completeEffects bool
		wantRuns        int
		wantStatus      ledger.Status
	}{
		{"custom effect: the redelivery skips it", false, false, 1, ledger.StatusCompleted},
		{"forward (default): sent again, same key", true, false, 2, ledger.StatusInProgress},
		{"forward with CompleteEffects: the redelivery skips it", true, true, 1, ledger.StatusCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *worker.Config) { c.CompleteEffects = tt.completeEffects })
			effect, runs := oneEffect(f, tt.forward)
			e := env(fmt.Sprintf("lost-delete-%v-%v", tt.forward, tt.completeEffects), "A")
			k := ledger.Key{Tenant: "acme", Event: e.Key, Effect: effect}
			for receive := 1; receive <= 2; receive++ {
				resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, receive)}})
				if len(resp.BatchItemFailures) != 0 {
					t.Fatalf("receive %d failed", receive)
				}
				if receive == 1 {
					if r, err := f.ledger.Record(context.Background(), k); err != nil || r.Status != tt.wantStatus {
						t.Errorf("after the first run the record is %v, %v; want %s", r.Status, err, tt.wantStatus)
					}
				}
				f.clock.Advance(time.Hour) // the deletion is lost: back after the visibility timeout
			}
			keys := runs()
			if len(keys) != tt.wantRuns || (len(keys) == 2 && keys[0] != keys[1]) {
				t.Errorf("effect ran %d times with keys %v, want %d with one key", len(keys), keys, tt.wantRuns)
			}
		})
	}
}

func TestOnce(t *testing.T) {
	t.Run("the event enqueued again skips a completed effect", func(t *testing.T) {
		f := newFixture(t, nil)
		calls := map[string]int{}
		var keys []string
		f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			return ev.Once(ctx, "charge", func(_ context.Context, key string) error {
				calls[ev.EventID]++
				keys = append(keys, key)
				return nil
			})
		})
		e := env("1", "A")
		// The first message succeeded (its claim is its only write); the
		// second holds the same event, later in the conversation (ingest
		// enqueued it again after losing its claim's completion).
		for _, r := range []events.SQSMessage{rec(t, e, 1), recAs(t, "m-1-again", e, 1)} {
			f.clock.Advance(time.Hour) // out of the first lease too
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
			if len(resp.BatchItemFailures) != 0 {
				t.Fatalf("%s failed", r.MessageId)
			}
		}
		if calls["1"] != 1 {
			t.Errorf("effect ran %d times, want 1", calls["1"])
		}
		wantKey := ledger.Key{Tenant: "acme", Event: e.Key, Effect: "charge"}.IdempotencyKey()
		if len(keys) != 1 || keys[0] != wantKey {
			t.Errorf("idempotency keys = %v, want [%s]", keys, wantKey)
		}
		outs := sequence(t, f.logs)
		if !slices.Equal(outs, []string{"processed", "skipped_duplicate"}) {
			t.Errorf("outcomes = %v, want processed then skipped_duplicate", outs)
		}
	})

	t.Run("a redrive runs the effects its message did not complete", func(t *testing.T) {
		// The first message claimed the effect and its worker crashed, until
		// SQS moved the message to the DLQ: its claim is all that is left.
		// However it comes back — scripts/replay, AWS's move task (a new
		// message with the same envelope), or a dead letter the worker wrote
		// moved back — the effect runs: a custom effect always (its success
		// would have been completed at once); the forward because the
		// message carries the same envelope (its origin). Only the forward
		// of a later copy the ingest enqueued (a new envelope) counts the
		// earlier message's claim as done by its deletion.
		tests := []struct {
			name    string
			forward bool
			redrive func(r *events.SQSMessage, e *envelope.Envelope)
			want    int
		}{
			{"custom effect, scripts/replay", false, markReplay, 1},
			{"custom effect, AWS move task", false, moveTask, 1},
			{"custom effect, plain later message", false, plain, 1},
			{"forward, scripts/replay", true, markReplay, 1},
			{"forward, AWS move task", true, moveTask, 1},
			{"forward, the worker's dead letter moved back", true, workerDeadLetter, 1},
			{"forward, plain later message", true, plain, 0},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f := newFixture(t, nil)
				e := env("crash-"+strings.ReplaceAll(tt.name, " ", "-"), "A")
				effect, runs := oneEffect(f, tt.forward)
				if _, err := f.ledger.Claim(context.Background(), fenceOf(t, e, 1), ledger.Key{Tenant: "acme", Event: e.Key, Effect: effect}, 0); err != nil {
					t.Fatal(err)
				}
				f.clock.Advance(time.Hour)
				r := recAs(t, "m-redriven-"+e.EventID, e, 1)
				tt.redrive(&r, e)
				if resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}}); len(resp.BatchItemFailures) != 0 {
					t.Fatalf("failures %v", failed(resp))
				}
				if calls := len(runs()); calls != tt.want {
					t.Errorf("effect ran %d times, want %d", calls, tt.want)
				}
			})
		}
	})

	t.Run("a retry skips the effects that ran before the failure", func(t *testing.T) {
		f := newFixture(t, nil)
		calls := map[string]int{}
		f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			for _, name := range []string{"charge", "charge", "email"} { // a repeated name runs once
				err := ev.Once(ctx, name, func(context.Context, string) error {
					calls[name]++
					if name == "email" && calls[name] == 1 {
						return errors.New("smtp 451")
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		e := env("1", "A")
		for attempt, want := range []int{1, 0} {
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, attempt+1)}})
			if len(resp.BatchItemFailures) != want {
				t.Fatalf("attempt %d: failures %v, want %d", attempt+1, failed(resp), want)
			}
		}
		if calls["charge"] != 1 || calls["email"] != 2 {
			t.Errorf("calls = %v, want charge once (completed when the message failed), email twice", calls)
		}
		r, err := f.ledger.Record(context.Background(), ledger.Key{Tenant: "acme", Event: e.Key, Effect: "charge"})
		if err != nil || r.Status != ledger.StatusCompleted {
			t.Errorf("charge record = %+v, %v; want COMPLETED by the failed attempt", r, err)
		}
	})

	t.Run("a failed effect is recorded and runs again on the retry", func(t *testing.T) {
		f := newFixture(t, nil)
		calls := 0
		f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			return ev.Once(ctx, "charge", func(context.Context, string) error {
				calls++
				if calls == 1 {
					return errors.New("gateway timeout")
				}
				return nil
			})
		})
		e := env("1", "A")
		f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 1)}})
		r, err := f.ledger.Record(context.Background(), ledger.Key{Tenant: "acme", Event: e.Key, Effect: "charge"})
		if err != nil || r.Status != ledger.StatusFailed || !strings.Contains(r.Reason, "gateway timeout") {
			t.Errorf("ledger record = %+v, %v; want FAILED with the reason", r, err)
		}
		resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 2)}})
		if len(resp.BatchItemFailures) != 0 || calls != 2 {
			t.Errorf("retry: failures %v, effect calls %d; want success on the 2nd call", failed(resp), calls)
		}
	})

	t.Run("an effect held by another live worker is retried after its lease", func(t *testing.T) {
		f := newFixture(t, nil)
		e := env("1", "A")
		ctx := context.Background()
		other := fenceOf(t, e, 1) // the first delivery's worker, still running
		if _, err := f.ledger.Claim(ctx, other, ledger.Key{Tenant: "acme", Event: e.Key, Effect: "charge"}, 10*time.Minute); err != nil {
			t.Fatal(err)
		}
		f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			return ev.Once(ctx, "charge", func(context.Context, string) error {
				t.Error("effect ran under another worker's live lease")
				return nil
			})
		})
		resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 2)}})
		if len(resp.BatchItemFailures) != 1 || f.sqs.visibility["rh-1"] != 600 {
			t.Errorf("failures %v, visibility %d; want failed, hidden for the 600 s left on the lease", failed(resp), f.sqs.visibility["rh-1"])
		}
	})

	t.Run("a completion fenced by a newer worker costs no further write", func(t *testing.T) {
		fails := &failCounter{}
		f := newFixture(t, func(c *worker.Config) { fails.Memory = c.Ledger.(*ledger.Memory); c.Ledger = fails })
		e := env("1", "A")
		k := ledger.Key{Tenant: "acme", Event: e.Key, Effect: "charge"}
		f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			return ev.Once(ctx, "charge", func(ctx context.Context, _ string) error {
				// Stuck past the lease: a newer worker takes the effect over.
				f.clock.Advance(time.Hour)
				_, err := f.ledger.Claim(ctx, fenceOf(t, e, 2), k, 0)
				return err
			})
		})
		resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 1)}})
		if got := outcomes(t, f.logs)["m-1"]; len(resp.BatchItemFailures) != 1 || got != "fenced" {
			t.Errorf("failures %v, outcome %q; want the message failed as fenced", failed(resp), got)
		}
		if fails.n != 0 {
			t.Errorf("Fail called %d times after a fenced Complete, want 0 (the lease is not ours to give up)", fails.n)
		}
	})

	t.Run("invalid effect name is permanent", func(t *testing.T) {
		f := newFixture(t, nil)
		f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			return ev.Once(ctx, "bad name", func(context.Context, string) error { return nil })
		})
		f.h.Handle(context.Background(), batch(t, env("1", "A")))
		if len(f.sqs.sent) != 1 {
			t.Errorf("%d dead letters, want 1", len(f.sqs.sent))
		}
	})
}

// The ways a dead letter comes back to its queue.
func markReplay(r *events.SQSMessage, _ *envelope.Envelope) {
	r.MessageAttributes = map[string]events.SQSMessageAttribute{worker.AttrReplayOf: {StringValue: aws.String("dlq-1"), DataType: "String"}}
}

func moveTask(r *events.SQSMessage, e *envelope.Envelope) {
	r.Attributes["SentTimestamp"] = strconv.FormatInt(e.ReceivedAt.Add(3*time.Hour).UnixMilli(), 10)
}

func workerDeadLetter(r *events.SQSMessage, e *envelope.Envelope) {
	r.MessageAttributes = map[string]events.SQSMessageAttribute{worker.AttrMessageID: {StringValue: aws.String("m-1"), DataType: "String"}}
	r.Attributes["SentTimestamp"] = strconv.FormatInt(e.ReceivedAt.Add(time.Second).UnixMilli(), 10)
}

// plain is the event enqueued again by the ingest: a new envelope.
func plain(r *events.SQSMessage, e *envelope.Envelope) {
	b, err := reenqueued(e).Encode()
	if err != nil {
		panic(err)
	}
	r.Body = string(b)
}

func TestApplyIfNewer(t *testing.T) {
	f := newFixture(t, nil)
	versions := map[string]int64{"new": 20, "old": 10, "newest": 30}
	applied := map[string]bool{}
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		ok, err := ev.ApplyIfNewer(ctx, "customer:cus_1", versions[ev.EventID], []byte(ev.EventID))
		applied[ev.EventID] = ok
		return err
	})
	// Delivered out of order: new, old, newest.
	resp, _ := f.h.Handle(context.Background(), batch(t, env("new", "A"), env("old", "A"), env("newest", "A")))
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures = %v", failed(resp))
	}
	if !applied["new"] || applied["old"] || !applied["newest"] {
		t.Errorf("applied = %v, want new and newest, not old", applied)
	}
	e, err := f.ledger.Entity(context.Background(), "acme", "customer:cus_1")
	if err != nil || e.Version != 30 || string(e.Data) != "newest" {
		t.Errorf("Entity() = %+v, %v; want version 30", e, err)
	}
}

func TestPanicIsRetried(t *testing.T) {
	f := newFixture(t, nil)
	f.reg.Handle(worker.Any, worker.Any, func(_ context.Context, ev *worker.Event) error {
		if ev.EventID == "boom" {
			panic("nil map")
		}
		return nil
	})
	resp, err := f.h.Handle(context.Background(), batch(t, env("boom", "A"), env("ok", "B")))
	if err != nil || !slices.Equal(failed(resp), []string{"m-boom"}) {
		t.Errorf("Handle() = %v, %v; want only the panicking message failed", failed(resp), err)
	}
}

func TestLogLine(t *testing.T) {
	f := newFixture(t, nil)
	f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		return ev.Once(ctx, "charge", func(context.Context, string) error {
			f.clock.Advance(20 * time.Millisecond)
			return nil
		})
	})
	f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, env("1", "A"), 3)}})
	lines := f.logs.Lines(t)
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want the message's (DEBUG) and the batch's:\n%s", len(lines), f.logs)
	}
	msg, batch := lines[0], lines[1]
	checks := []struct {
		line map[string]any
		want map[string]any
		has  []string
	}{
		{msg, map[string]any{
			"msg": "message", "level": "DEBUG", "tenantId": "acme", "provider": "stripe", "eventId": "1", "idempotencyKey": "acme#stripe#1",
			"messageId": "m-1", "outcome": "processed", "receiveCount": float64(3), "effectMs": float64(20),
		}, []string{"durationMs"}},
		{batch, map[string]any{"msg": "batch", "level": "INFO", "outcome": "processed", "Messages": float64(1)},
			[]string{"MessageDuration", "EffectLatency", "_aws"}},
	}
	for _, c := range checks {
		for k, v := range c.want {
			if c.line[k] != v {
				t.Errorf("%v line: %s = %v, want %v", c.line["msg"], k, c.line[k], v)
			}
		}
		for _, k := range c.has {
			if _, ok := c.line[k]; !ok {
				t.Errorf("%v line lacks %s", c.line["msg"], k)
			}
		}
	}
	if _, ok := msg["_aws"]; ok {
		t.Error("message line carries an EMF block; metrics go on the batch line")
	}
	if got := batch["EffectLatency"]; !reflect.DeepEqual(got, []any{float64(20)}) {
		t.Errorf("batch EffectLatency = %v, want [20]", got)
	}
	if s := f.logs.String(); strings.Contains(s, "4242") || strings.Contains(s, "secret_card") {
		t.Errorf("log line contains the body: %s", s)
	}
}

// A replay's line names the tool that moved it back (inspect's history
// prints it) and is kept at INFO even when the replay succeeds.
func TestLogLineNamesTheReplayTool(t *testing.T) {
	str := func(v string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	tests := []struct {
		name  string
		attrs map[string]events.SQSMessageAttribute
		want  map[string]any // "" value: absent
	}{
		{"scripts/replay", map[string]events.SQSMessageAttribute{worker.AttrReplayOf: str("d-1")},
			map[string]any{"level": "INFO", "replayedBy": "scripts/replay", "replayOf": "d-1"}},
		{"a move task keeps the dead letter's attributes", map[string]events.SQSMessageAttribute{worker.AttrReason: str("answered 400")},
			map[string]any{"level": "INFO", "replayedBy": "dlq-redrive", "replayOf": nil}},
		{"the ingest's message", nil, map[string]any{"level": "DEBUG", "replayedBy": nil, "replayOf": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.reg.Handle(worker.Any, worker.Any, func(context.Context, *worker.Event) error { return nil })
			r := rec(t, env("1", "A"), 1)
			r.MessageAttributes = tt.attrs
			f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
			var msg map[string]any
			for _, l := range f.logs.Lines(t) {
				if l["msg"] == "message" {
					msg = l
				}
			}
			if msg == nil || msg["outcome"] != "processed" {
				t.Fatalf("no processed message line:\n%s", f.logs)
			}
			for k, v := range tt.want {
				if msg[k] != v {
					t.Errorf("%s = %v, want %v", k, msg[k], v)
				}
			}
		})
	}
}

func TestDLQURL(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/hookpack-acme.fifo", "https://sqs.eu-west-1.amazonaws.com/123456789012/hookpack-acme-dlq.fifo", true},
		{"http://127.0.0.1:5000/123456789012/t.fifo", "http://127.0.0.1:5000/123456789012/t-dlq.fifo", true},
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/hookpack-acme-dlq.fifo", "", false},
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/standard", "", false},
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/.fifo", "", false},
	}
	for _, tt := range tests {
		got, err := worker.DLQURL(tt.in)
		if got != tt.want || (err == nil) != tt.ok || (err != nil && !errors.Is(err, worker.ErrNoDLQ)) {
			t.Errorf("DLQURL(%q) = %q, %v; want %q (ok=%v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestRegistryLookup(t *testing.T) {
	r := worker.NewRegistry()
	mark := func(name string) worker.HandlerFunc {
		return func(ctx context.Context, ev *worker.Event) error { return errors.New(name) }
	}
	r.Handle("stripe", "invoice.paid", mark("exact"))
	r.Handle("stripe", worker.Any, mark("provider"))
	r.Handle(worker.Any, "push", mark("type"))
	tests := []struct{ provider, typ, want string }{
		{"stripe", "invoice.paid", "exact"},
		{"stripe", "charge.failed", "provider"},
		{"github", "push", "type"},
		{"github", "issues", ""},
	}
	for _, tt := range tests {
		h, ok := r.Lookup(tt.provider, tt.typ)
		got := ""
		if ok {
			got = h(context.Background(), nil).Error()
		}
		if got != tt.want {
			t.Errorf("Lookup(%s, %s) = %q, want %q", tt.provider, tt.typ, got, tt.want)
		}
	}
	r.Handle(worker.Any, worker.Any, mark("fallback"))
	if h, ok := r.Lookup("github", "issues"); !ok || h(context.Background(), nil).Error() != "fallback" {
		t.Error("Lookup() did not fall back to Any/Any")
	}
}

// The Lambda event fixture has the shape the event source mapping sends.
func TestLambdaEventFixture(t *testing.T) {
	b, err := os.ReadFile("testdata/sqs-fifo-batch.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, nil)
	var ran []string
	f.reg.Handle(worker.Any, worker.Any, func(_ context.Context, ev *worker.Event) error {
		ran = append(ran, ev.EventID+"@"+ev.GroupID+"#"+fmt.Sprint(ev.Attempt))
		return nil
	})
	resp, _ := f.h.Handle(context.Background(), ev)
	if len(resp.BatchItemFailures) != 0 || !slices.Equal(ran, []string{"evt_1@cus_1#1", "evt_2@cus_1#2"}) {
		t.Errorf("fixture: failures %v, ran %v", failed(resp), ran)
	}
}

// failCounter counts Fail calls on the ledger it wraps.
type failCounter struct {
	*ledger.Memory
	n int
}

func (c *failCounter) Fail(ctx context.Context, l ledger.Lease, reason string) error {
	c.n++
	return c.Memory.Fail(ctx, l, reason)
}

// TestBatchLogsOneInfoLine: at INFO (Lambda's ApplicationLogLevel), a batch
// whose messages all succeed costs one log line, not one per message.
func TestBatchLogsOneInfoLine(t *testing.T) {
	var envs []*envelope.Envelope
	for i := range 10 {
		envs = append(envs, env(fmt.Sprint(i), fmt.Sprint("conv-", i%3)))
	}
	tests := []struct {
		name  string
		level slog.Level
		want  int
	}{
		{"info", slog.LevelInfo, 1},
		{"debug", slog.LevelDebug, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logtest.Buffer{}
			f := newFixture(t, func(c *worker.Config) {
				c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: tt.level}))
			})
			f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
				return ev.Once(ctx, "charge", func(context.Context, string) error { return nil })
			})
			if resp, _ := f.h.Handle(context.Background(), batch(t, envs...)); len(resp.BatchItemFailures) != 0 {
				t.Fatalf("failures = %v", failed(resp))
			}
			lines := logs.Lines(t)
			if len(lines) != tt.want {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), tt.want, logs)
			}
			last := lines[len(lines)-1]
			if last["msg"] != "batch" || last["Messages"] != float64(10) {
				t.Errorf("batch line = %v, want Messages 10", last)
			}
		})
	}
}
