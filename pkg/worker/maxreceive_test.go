package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/worker"
)

// refusingLedger is the in-memory ledger with its attempt counts and its
// dead-letter write (Bury) refused when set, as DynamoDB refuses throttled
// writes once the SDK's retries are spent; claims still land.
type refusingLedger struct {
	*ledger.Memory
	counts, bury bool
}

var errRefused = errors.New("ProvisionedThroughputExceededException: the write did not land")

func (l refusingLedger) FailedAttempt(ctx context.Context, id string, receive int) (int, error) {
	if l.counts {
		return 0, errRefused
	}
	return l.Memory.FailedAttempt(ctx, id, receive)
}

func (l refusingLedger) Bury(ctx context.Context, f ledger.Fence, keys []ledger.Key, own []ledger.Lease, reason string) error {
	if l.bury {
		return errRefused
	}
	return l.Memory.Bury(ctx, f, keys, own, reason)
}

// README's promise of one outcome per event has one way out: SQS's own
// maxReceiveCount move, whose dead letter has no reason. The worker gives
// up with its reason after MaxAttempts counted attempts, or after 10 ×
// MaxAttempts receives when the counts cannot be written, below
// MinMaxReceiveCount; SQS moves the message only when every dead letter
// the worker tries from then on fails. When the DLQ refused the send, the
// event's record holds the dead mark and its reason, and a later copy of
// the event does not run; when the ledger refused the mark (Bury), the
// record is left as the claims wrote it, and a later copy runs the event
// again. The claims landing prevents neither. Each case receives a
// message whose target always fails until the worker dead-letters it or
// SQS would move it, then delivers a later copy of its event.
func TestSQSMovesAMessageOnlyWhenItsDeadLetterFails(t *testing.T) {
	const maxAttempts = 3
	maxReceives := worker.MinMaxReceiveCount(maxAttempts)
	tests := []struct {
		name               string
		counts, bury, send bool   // refused: the attempt counts, Bury, the DLQ's send
		wantAt             int    // the receive the worker dead-letters it at; 0: SQS moves it
		wantReason         string // the dead letter's, or what the log says kept it back
		wantMarked         bool   // after SQS's move: the event's record is dead-marked
	}{
		{"every write lands: dead-lettered after MaxAttempts", false, false, false,
			maxAttempts, "gave up after 3 attempts: target answered 503", false},
		{"the counts refused: dead-lettered at 10 × MaxAttempts receives", true, false, false,
			10 * maxAttempts, "gave up after 30 receives (its attempts could not be counted", false},
		{"the counts and Bury refused, the claims landing: SQS moves it, the record unmarked", true, true, false,
			0, "dead-letter: record it in the ledger", false},
		{"Bury refused: SQS moves it, the record unmarked", false, true, false,
			0, "dead-letter: record it in the ledger", false},
		{"the DLQ refuses the send: SQS moves it, the record marked", false, false, true,
			0, "dead-letter: DLQ unreachable", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *worker.Config) {
				c.MaxAttempts = maxAttempts
				c.Ledger = refusingLedger{Memory: c.Ledger.(*ledger.Memory), counts: tt.counts, bury: tt.bury}
			})
			if tt.send {
				f.sqs.sendErr = errors.New("DLQ unreachable")
			}
			runs := 0
			f.reg.Handle(worker.Any, worker.Any, func(context.Context, *worker.Event) error {
				runs++
				return errors.New("target answered 503")
			})
			e := env("1", "A")
			deadAt := 0
			for receive := 1; receive < maxReceives && deadAt == 0; receive++ {
				resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec(t, e, receive)}})
				switch {
				case len(f.sqs.sent) > 0:
					deadAt = receive
				case len(resp.BatchItemFailures) != 1:
					t.Fatalf("receive %d: reported done without a dead letter\n%s", receive, f.logs.String())
				}
				// Past the backoff and every lease: the next receive finds
				// the records its predecessor left.
				f.clock.Advance(time.Hour)
			}
			if deadAt != tt.wantAt {
				t.Fatalf("dead-lettered by the worker at receive %d, want %d (0: never before maxReceiveCount %d)\n%s", deadAt, tt.wantAt, maxReceives, f.logs.String())
			}
			if deadAt > 0 {
				if reason := f.sqs.sent[0].msg.Attributes[worker.AttrReason]; !strings.HasPrefix(reason, tt.wantReason) {
					t.Errorf("reason = %q, want it to start with %q", reason, tt.wantReason)
				}
				return
			}
			if !strings.Contains(f.logs.String(), tt.wantReason) {
				t.Errorf("the log does not say why it was not dead-lettered (%q):\n%s", tt.wantReason, f.logs.String())
			}
			// SQS moves it now, without a reason attribute.
			r, err := f.ledger.Record(context.Background(), ledger.Key{Tenant: e.Tenant, Event: e.Key, Effect: ledger.EventEffect})
			if err != nil || (r.Status == ledger.StatusDead) != tt.wantMarked {
				t.Errorf("event record = %s %q, %v; want dead-marked: %v", r.Status, r.DeadMessage, err, tt.wantMarked)
			}
			before := runs
			later := recAs(t, "m-later", reenqueued(e), 1)
			f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{later}})
			if ran := runs > before; ran == tt.wantMarked {
				t.Errorf("a later copy of the event ran: %v, want %v", ran, !tt.wantMarked)
			}
		})
	}
}
