package inspect

import (
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/replay"
)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// History tells what happened in the order it happened, from the log where
// it has lines and from the stores where it has none.
func TestHistory(t *testing.T) {
	claim := &Claim{Status: idempotency.StatusCompleted, Received: at(0)}
	accepted := Delivery{Time: at(0), EventID: "d1", Outcome: "accepted", Status: 200}
	dup := Delivery{Time: at(5), EventID: "d1", Outcome: "duplicate", Status: 200}
	tests := []struct {
		name string
		j    Journey
		want []string // each step holds its string, in this order
	}{
		{"done after three tries, delivered twice",
			Journey{State: StateDone, Claim: claim, Deliveries: []Delivery{dup, accepted}, Runs: []Run{
				{Time: at(1), MessageID: "m1", Outcome: "retried", ReceiveCount: 1, Attempt: 1, Error: "answered 503"},
				{Time: at(3), MessageID: "m1", Outcome: "retried", ReceiveCount: 2, Attempt: 2, Error: "answered 503"},
				{Time: at(9), MessageID: "m1", Outcome: "processed", ReceiveCount: 3, Attempt: 3},
			}},
			[]string{"00Z received: accepted 200, eventId d1 (verified and queued)", "01Z attempt failed, retrying: message m1, receive 1, attempt 1: answered 503",
				"03Z attempt failed, retrying", "05Z received: duplicate 200", "09Z attempt done: message m1, receive 3", "09Z done"}},
		{"done, no log: the claim says when",
			Journey{State: StateDone, Claim: claim},
			[]string{"00Z received and verified (its claim", "done"}},
		{"dead-lettered, the log has the worker's line",
			Journey{State: StateDeadLettered, Claim: claim, Deliveries: []Delivery{accepted},
				DeadLetter: &replay.Item{OriginalMessageID: "m1", Reason: "answered 400", FailedAt: stamp(at(2))},
				Runs:       []Run{{Time: at(2), MessageID: "m1", Outcome: "dead_lettered", ReceiveCount: 1, Attempt: 1, Error: "answered 400"}}},
			[]string{"received: accepted", "02Z dead-lettered: message m1, receive 1, attempt 1: answered 400", "now dead lettered"}},
		{"dead-lettered, only its dead letter's attributes",
			Journey{State: StateDeadLettered, Claim: claim, DeadLetter: &replay.Item{OriginalMessageID: "m1", Reason: "answered 400", FailedAt: stamp(at(2))}},
			[]string{"received and verified", "02Z dead-lettered from message m1: answered 400 (its dead letter's attributes)", "now dead lettered"}},
		{"dead-lettered, only the ledger's record",
			Journey{State: StateDeadLettered, Claim: claim, Effects: []Effect{{Name: "forward", Status: ledger.StatusDead, DeadMessage: "m1", Reason: "answered 400"}}},
			[]string{"received and verified", "dead-lettered from message m1: answered 400 (the ledger's forward record", "now dead lettered"}},
		{"replayed and done",
			Journey{State: StateDone, Claim: claim, Runs: []Run{
				{Time: at(2), MessageID: "m1", Outcome: "dead_lettered", ReceiveCount: 1, Error: "answered 400"},
				{Time: at(60), MessageID: "m2", Outcome: "processed", ReceiveCount: 1, Attempt: 1},
			}},
			[]string{"received and verified", "02Z dead-lettered: message m1", "01:00Z replayed: its dead letter came back as message m2", "01:00Z attempt done: message m2", "01:00Z done"}},
		{"replayed by scripts/replay, named by the worker's line",
			Journey{State: StateDone, Claim: claim, Runs: []Run{
				{Time: at(2), MessageID: "m1", Outcome: "dead_lettered", ReceiveCount: 1, Error: "answered 400"},
				{Time: at(60), MessageID: "m2", Outcome: "processed", ReceiveCount: 1, ReplayedBy: "scripts/replay", ReplayOf: "d1"},
			}},
			[]string{"received and verified", "dead-lettered: message m1", "01:00Z replayed by scripts/replay: dead letter d1 came back as message m2", "01:00Z attempt done: message m2", "01:00Z done"}},
		{"replayed by a DLQ redrive, its line the first of the event",
			Journey{State: StateDone, Claim: claim, Runs: []Run{
				{Time: at(60), MessageID: "m2", Outcome: "processed", ReceiveCount: 1, ReplayedBy: "dlq-redrive"},
			}},
			[]string{"received and verified", "01:00Z replayed by a DLQ redrive (SQS's move task", "01:00Z attempt done: message m2", "01:00Z done"}},
		{"a copy of a dead-lettered event is no replay",
			Journey{State: StateDeadLettered, Claim: claim, Runs: []Run{
				{Time: at(2), MessageID: "m1", Outcome: "dead_lettered", ReceiveCount: 1},
				{Time: at(9), MessageID: "m3", Outcome: "skipped_dead_lettered", ReceiveCount: 1},
			}},
			[]string{"received and verified", "dead-lettered: message m1", "deleted: a copy of a dead-lettered event, not a replay of it: message m3", "now dead lettered"}},
		{"replayed, dead-lettered again",
			Journey{State: StateDeadLettered, Claim: claim,
				DeadLetter: &replay.Item{OriginalMessageID: "m2", Reason: "answered 400", FailedAt: stamp(at(61))},
				Runs: []Run{
					{Time: at(2), MessageID: "m1", Outcome: "dead_lettered", ReceiveCount: 1},
					{Time: at(61), MessageID: "m2", Outcome: "dead_lettered", ReceiveCount: 1},
				}},
			[]string{"received and verified", "02Z dead-lettered: message m1", "01:01Z replayed: its dead letter came back as message m2", "01:01Z dead-lettered: message m2", "now dead lettered"}},
		{"replay in flight",
			Journey{State: StateInFlight, Claim: claim, Runs: []Run{{Time: at(2), MessageID: "m1", Outcome: "dead_lettered", ReceiveCount: 1}}},
			[]string{"received and verified", "dead-lettered: message m1", "now in flight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := history(tt.j)
			var lines []string
			for _, s := range got {
				lines = append(lines, stamp(s.Time)+" "+s.What)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("history() = %d steps, want %d:\n%s", len(got), len(tt.want), strings.Join(lines, "\n"))
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("history() step %d = %q, want %q in it; all:\n%s", i, lines[i], w, strings.Join(lines, "\n"))
				}
			}
		})
	}
}
