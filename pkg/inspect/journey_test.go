package inspect

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/replay"
)

// stores are hand-written fakes of every store an Inspector reads.
type stores struct {
	claim    *idempotency.Record
	effects  []ledger.Record
	attempts map[string]int
	queue    [2][3]int // source, DLQ: visible, in flight, delayed
	dead     []replay.Item
	runs     []Run
	lines    []Delivery
}

func (s *stores) Record(_ context.Context, key string) (idempotency.Record, error) {
	if s.claim == nil {
		return idempotency.Record{}, idempotency.ErrNotFound
	}
	return *s.claim, nil
}

type ledgerFake struct{ *stores }

func (l ledgerFake) Record(_ context.Context, k ledger.Key) (ledger.Record, error) {
	for _, r := range l.effects {
		if r.Key == k {
			return r, nil
		}
	}
	return ledger.Record{}, ledger.ErrNotFound
}

func (l ledgerFake) Effects(context.Context, string, string) ([]ledger.Record, error) {
	return l.effects, nil
}

func (l ledgerFake) Attempts(_ context.Context, id string) (int, error) { return l.attempts[id], nil }

func (s *stores) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	n := s.queue[0]
	if strings.HasSuffix(aws.ToString(in.QueueUrl), "-dlq.fifo") {
		n = s.queue[1]
	}
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		"ApproximateNumberOfMessages": strconv.Itoa(n[0]), "ApproximateNumberOfMessagesNotVisible": strconv.Itoa(n[1]),
		"ApproximateNumberOfMessagesDelayed": strconv.Itoa(n[2]), "MessageRetentionPeriod": "1209600",
	}}, nil
}

func (s *stores) List(context.Context, string, replay.Filter) ([]replay.Item, error) {
	return s.dead, nil
}

func (s *stores) Runs(context.Context, string, string) ([]Run, error) { return s.runs, nil }

func (s *stores) Deliveries(context.Context, string, string) ([]Delivery, error) { return s.lines, nil }

// fakeInspector reads s and, when out is not nil, the tenant's
// destinations from out, at t0.
func fakeInspector(s *stores, out outboundReader) *Inspector {
	return New(Config{
		Deployment: Deployment{QueueURLTemplate: "https://q/hookpack_{tenant}.fifo", MaxAttempts: 15},
		Claims:     s, Ledger: ledgerFake{s}, Queues: s, DeadLetters: s, Logs: s, Runs: s,
		Outbound: out, Providers: []string{"stripe"}, Now: func() time.Time { return t0 },
	})
}

// The journey of one event in each state it goes through, from the fakes:
// the state, the effects as an operator reads them, the attempts and the
// history, and the text an operator reads.
func TestJourney(t *testing.T) {
	const key = "acme#stripe#evt_1"
	fwd := ledger.Key{Tenant: "acme", Event: key, Effect: "forward"}
	claim := &idempotency.Record{Status: idempotency.StatusCompleted, Expires: t0.Add(24 * time.Hour)}
	accepted := Delivery{Time: at(-60), Provider: "stripe", EventID: "evt_1", Key: key, Outcome: "accepted", Status: 200}
	failed := func(s int, id string, n int) Run {
		return Run{Time: at(s), MessageID: id, Outcome: "retried", ReceiveCount: n, Attempt: n, Error: "answered 503"}
	}
	backoff := func(r Run, s int) Run { r.VisibleAgain = r.Time.Add(time.Duration(s) * time.Second); return r }
	deadRun := Run{Time: at(-30), MessageID: "m1", Outcome: "dead_lettered", ReceiveCount: 1, Attempt: 1, Error: "answered 400"}
	deadRec := ledger.Record{Key: fwd, Status: ledger.StatusDead, DeadMessage: "m1", Reason: "answered 400", Expires: t0.Add(time.Hour)}
	letter := replay.Item{MessageID: "d1", GroupID: "cus_1", OriginalMessageID: "m1", Reason: "answered 400", Attempts: "1", FailedAt: stamp(at(-30)), SentAt: at(-30), EventKey: key}
	tests := []struct {
		name     string
		s        stores
		state    State
		text     []string // in the text output
		never    []string // never in it
		messages int
	}{
		{"done after three tries: done, with its attempts",
			stores{claim: claim, effects: []ledger.Record{{Key: fwd, Status: ledger.StatusInProgress, LeaseExpires: at(-1)}},
				attempts: map[string]int{"m1": 2}, lines: []Delivery{accepted},
				runs: []Run{failed(-50, "m1", 1), failed(-40, "m1", 2), {Time: at(-20), MessageID: "m1", Outcome: "processed", ReceiveCount: 3, Attempt: 3}}},
			StateDone,
			[]string{"forward DONE: forwarded", "message m1: 2 failed (the ledger's count)", "2026-11-28T07:59:00Z received: accepted 200", "07:59:20Z attempt failed, retrying: message m1, receive 2", "07:59:40Z done"},
			[]string{"forward INPROGRESS", "replay once"}, 1},
		{"dead-lettered: its dead letter listed",
			stores{claim: claim, effects: []ledger.Record{deadRec}, queue: [2][3]int{{}, {1, 0, 0}}, dead: []replay.Item{letter}, runs: []Run{deadRun}, attempts: map[string]int{"m1": 1}},
			StateDeadLettered,
			[]string{"DEAD_LETTERED: its message is in the tenant's DLQ: answered 400", "forward DEAD: dead-lettered from message m1 (answered 400)", "DLQ: 1", "replay once"},
			nil, 1},
		{"during a replay: the redrive hides the dead letter",
			stores{claim: claim, effects: []ledger.Record{deadRec}, queue: [2][3]int{{}, {1, 1, 0}}, runs: []Run{deadRun}},
			StateReplaying,
			[]string{"REPLAYING", "DLQ: 1 (+1 hidden)", "hides 1"},
			[]string{"no longer in the DLQ"}, 1},
		{"replayed, its message claimed by a worker: in flight",
			stores{claim: claim, effects: []ledger.Record{{Key: fwd, Status: ledger.StatusInProgress, LeaseExpires: at(60)}}, queue: [2][3]int{{0, 1, 0}, {}},
				runs: []Run{deadRun, failed(-10, "m2", 1)}, attempts: map[string]int{"m1": 1, "m2": 1}},
			StateInFlight,
			[]string{"IN_FLIGHT: a worker holds an effect's lease (a replay of its dead letter", "forward IN PROGRESS: a worker holds its lease until", "message m2 (a replay): 1 failed",
				"replayed: its dead letter came back as message m2"},
			[]string{"DLQ: 1"}, 2},
		{"retrying: attempt n of N, and when the worker's backoff brings it back",
			stores{claim: claim, effects: []ledger.Record{{Key: fwd, Status: ledger.StatusFailed, Reason: "answered 503"}}, queue: [2][3]int{{0, 1, 0}, {}},
				attempts: map[string]int{"m1": 2}, runs: []Run{failed(-50, "m1", 1), backoff(failed(-40, "m1", 2), 60)}},
			StateRetrying,
			[]string{"RETRYING: an effect failed or was interrupted; its message is received again after its backoff; attempt 2 of 15 failed (message m1); " +
				"the next, 3 of 15, at ≈ 2026-11-28T08:00:20Z, when the worker's backoff makes it visible again (set at 2026-11-28T07:59:20Z)"},
			nil, 1},
		{"retrying, its last line set no backoff: the queue's visibility timeout",
			stores{claim: claim, effects: []ledger.Record{{Key: fwd, Status: ledger.StatusFailed, Reason: "timed out"}}, queue: [2][3]int{{0, 1, 0}, {}},
				attempts: map[string]int{"m1": 1}, runs: []Run{{Time: at(-40), MessageID: "m1", Outcome: "timed_out", ReceiveCount: 1, Attempt: 1}}},
			StateRetrying,
			[]string{"attempt 1 of 15 failed (message m1); the next, 2 of 15, when the queue's visibility timeout brings it back (its last log line, 2026-11-28T07:59:20Z, set no backoff)"},
			[]string{" at ≈ "}, 1},
		{"retrying, no log line: no attempt is made up",
			stores{claim: claim, effects: []ledger.Record{{Key: fwd, Status: ledger.StatusFailed, Reason: "answered 503"}}, queue: [2][3]int{{0, 1, 0}, {}}},
			StateRetrying,
			[]string{"RETRYING: an effect failed or was interrupted; its message is received again after its backoff\n", "not visible without receiving it"},
			[]string{"of 15", " at ≈ "}, 0},
		{"replayed and dead-lettered again: the newest dead letter",
			stores{claim: claim, effects: []ledger.Record{{Key: fwd, Status: ledger.StatusDead, DeadMessage: "m2", Reason: "answered 400 again"}}, queue: [2][3]int{{}, {2, 0, 0}},
				dead: []replay.Item{letter, {MessageID: "d2", GroupID: "cus_1", OriginalMessageID: "m2", Reason: "answered 400 again", SentAt: at(-5), EventKey: key}},
				runs: []Run{deadRun, {Time: at(-5), MessageID: "m2", Outcome: "dead_lettered", ReceiveCount: 1, Error: "answered 400 again"}}},
			StateDeadLettered,
			[]string{"DEAD_LETTERED: its message is in the tenant's DLQ: answered 400 again", "message d2 (was m2)", "dead-lettered: message m2"},
			nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			js, err := fakeInspector(&s, nil).Inspect(context.Background(), Query{Tenant: "acme", Event: key})
			if err != nil || len(js) != 1 {
				t.Fatalf("Inspect() = %d journeys, %v; want one", len(js), err)
			}
			j := js[0]
			var out bytes.Buffer
			if err := WriteJourney(&out, j); err != nil {
				t.Fatal(err)
			}
			if j.State != tt.state || len(j.Messages) != tt.messages {
				t.Errorf("Inspect() = %s, %d messages; want %s, %d:\n%s", j.State, len(j.Messages), tt.state, tt.messages, out.String())
			}
			for _, w := range tt.text {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the output lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.never {
				if strings.Contains(out.String(), w) {
					t.Errorf("the output holds %q:\n%s", w, out.String())
				}
			}
		})
	}
}
