package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

// onLostAnswers runs test on the memory twin and on DynamoDB Local, each
// able to lose the answers of the ledger's next n claims after they landed
// (lose; on DynamoDB Local, of its next n requests), which the AWS SDK then
// sends again.
func onLostAnswers(t *testing.T, mod func(c *worker.Config), test func(t *testing.T, f *fixture, lose func(n int))) {
	t.Run("memory", func(t *testing.T) {
		f := newFixture(t, mod)
		test(t, f, f.ledger.LoseAnswers)
	})
	t.Run("DynamoDBLocal", func(t *testing.T) {
		lost := &awstest.LostAnswers{}
		client := dynamodb.NewFromConfig(lost.Install(awstest.Config(t, awstest.DynamoDBLocal(t))))
		table := awstest.Name(t)
		if err := provision.Ledger(context.Background(), client, table); err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, func(c *worker.Config) {
			c.Ledger = ledger.NewDynamoDB(client, table, ledger.Options{Now: c.Now})
			if mod != nil {
				mod(c)
			}
		})
		test(t, f, lost.Lose)
		if n := lost.Pending(); n > 0 {
			t.Errorf("%d answers to lose were never lost: the test did not run what it meant to", n)
		}
	})
}

// A claim whose answer was lost, and which the SDK sent again, answers as
// its first try would have (ledger: a retry that finds its own token reads
// what the claim replaced off the record it wrote).
func TestALostClaimAnswerKeepsWhatTheClaimFound(t *testing.T) {
	ctx := context.Background()

	// One message's body re-sent by hand twice (its dead letter, which
	// names no event, re-sent without the replay tool's marker), both in
	// one batch, the first copy's claim answered only on the SDK's retry:
	// the first copy posts, the second counts its claim done once it was
	// deleted, and posts nothing.
	t.Run("two hand re-sends post once", func(t *testing.T) {
		onLostAnswers(t, nil, func(t *testing.T, f *fixture, lose func(int)) {
			p := &fakePoster{err: forward.Classify(503, nil, nil, time.Now())}
			f.reg.Handle(worker.Any, worker.Any, worker.Forward(fakeOutbound{out: tenant.Outbound{TargetURL: "https://acme.example/hooks", Secrets: []string{"whsec_c2VjcmV0"}}}, p))
			e := env("resent-"+t.Name(), "H")
			if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 1)}}); len(resp.BatchItemFailures) != 1 {
				t.Fatalf("first attempt: failures %v, want it retried", failed(resp))
			}
			p.mu.Lock()
			p.err = nil
			p.mu.Unlock()
			f.clock.Advance(time.Hour)
			first, second := recAs(t, "hand-1-"+t.Name(), e, 1), recAs(t, "hand-2-"+t.Name(), e, 1)
			lose(1)
			resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{first, second}})
			if got := failed(resp); len(got) > 1 || len(got) == 1 && got[0] != second.MessageId {
				t.Fatalf("failures %v, want at most the second copy back", got)
			}
			// The second copy again, after every lease of the first ended.
			for i := 2; i <= 3 && len(resp.BatchItemFailures) > 0; i++ {
				f.clock.Advance(time.Hour)
				resp, _ = f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{recAs(t, second.MessageId, e, i)}})
			}
			if len(resp.BatchItemFailures) != 0 {
				t.Fatalf("the second copy never ended: %v\n%s", failed(resp), f.logs)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if len(p.reqs) != 2 {
				t.Errorf("%d posts, want 2: the refused first attempt and the first copy's (the second copy posted again)", len(p.reqs))
			}
			if got := outcomes(t, f.logs)[second.MessageId]; got != "skipped_duplicate" {
				t.Errorf("the second copy's outcome = %q, want skipped_duplicate", got)
			}
		})
	})

	// An effect that failed after reaching its downstream runs again with
	// ev.Repeat set, though its retry's claims were answered only on the
	// SDK's retries: a downstream that does not deduplicate is checked
	// first (README's `if ev.Repeat`).
	t.Run("an effect that failed runs again with Repeat", func(t *testing.T) {
		onLostAnswers(t, nil, func(t *testing.T, f *fixture, lose func(int)) {
			var repeats []bool
			f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
				return ev.Once(ctx, "email", func(context.Context, string) error {
					repeats = append(repeats, ev.Repeat)
					if len(repeats) == 1 {
						return errors.New("sent, then the connection reset")
					}
					return nil
				})
			})
			e := env("repeat-"+t.Name(), "R")
			if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 1)}}); len(resp.BatchItemFailures) != 1 {
				t.Fatalf("first attempt: failures %v, want it retried", failed(resp))
			}
			f.clock.Advance(time.Minute)
			lose(2) // the event's claim, then the effect's
			if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(t, e, 2)}}); len(resp.BatchItemFailures) != 0 {
				t.Fatalf("the retry failed: %v\n%s", failed(resp), f.logs)
			}
			if len(repeats) != 2 || repeats[0] || !repeats[1] {
				t.Errorf("Repeat in the runs = %v, want [false true]", repeats)
			}
		})
	})
}
