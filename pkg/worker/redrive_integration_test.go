package worker_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/local/logtest"
	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/worker"
)

// The console's "Start DLQ redrive" (StartMessageMoveTask) on the
// emulator: a message whose worker crashed inside its effects until SQS
// moved it to the DLQ comes back as a new message (new id, SequenceNumber
// and SentTimestamp; same body and attributes). It runs every effect that
// did not complete — the forward its crashed worker had claimed, and the
// custom effect it never reached — and skips the one that completed.
func TestAWSRedriveRunsUnfinishedEffectsOnMoto(t *testing.T) {
	s := newStackWith(t, provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: 1})
	ctx := context.Background()
	runs := map[string]int{}
	reg := worker.NewRegistry()
	fwd := s.forwardHandler()
	reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		for _, name := range []string{"charge", "email"} {
			if err := ev.Once(ctx, name, func(context.Context, string) error { runs[name]++; return nil }); err != nil {
				return err
			}
		}
		return fwd(ctx, ev)
	})
	var logs logtest.Buffer
	h := worker.New(s.workerConfig(&logs, reg))

	// Receive 1: the worker completed "charge", claimed the forward and
	// died (what it leaves in the ledger, fenced as the worker fences).
	e := s.env("c1-e1", "c1")
	s.send(e, "")
	first := s.receive(s.pair.URL)
	if len(first.Records) != 1 {
		t.Fatalf("received %d messages, want 1", len(first.Records))
	}
	f, err := ledger.NewFence("acme", first.Records[0].Attributes["MessageGroupId"], first.Records[0].Attributes["SequenceNumber"], 1, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Origin = e.ReceivedAt.UTC().Format(time.RFC3339Nano)
	charge, err := s.ledger.Claim(ctx, f, ledger.Key{Tenant: "acme", Event: e.Key, Effect: "charge"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ledger.Complete(ctx, charge); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Claim(ctx, f, ledger.Key{Tenant: "acme", Event: e.Key, Effect: worker.ForwardEffect}, time.Second); err != nil {
		t.Fatal(err)
	}
	runs["charge"] = 1

	// The crash leaves the message in flight; past maxReceiveCount SQS moves
	// it to the DLQ without a reason.
	s.expire(first)
	if ev := s.receive(s.pair.URL); len(ev.Records) != 0 || s.depth(s.pair.DLQURL) != 1 {
		t.Fatalf("after maxReceiveCount: %d received, %d dead letters; want the message moved to the DLQ", len(ev.Records), s.depth(s.pair.DLQURL))
	}

	// The operator's redrive, as the console does it.
	dlqARN := esm.ARNOf(s.pair.DLQURL, "us-east-1")
	if _, err := s.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN)}); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(time.Minute) // past the crashed worker's leases
	redriven := s.receive(s.pair.URL)
	if len(redriven.Records) != 1 || redriven.Records[0].MessageId == first.Records[0].MessageId {
		t.Fatalf("redriven = %+v, want one new message", redriven.Records)
	}
	sent, _ := strconv.ParseInt(redriven.Records[0].Attributes["SentTimestamp"], 10, 64)
	if firstSent, _ := strconv.ParseInt(first.Records[0].Attributes["SentTimestamp"], 10, 64); sent < firstSent {
		t.Errorf("SentTimestamp %d of the redriven message, want a new one (≥ %d)", sent, firstSent)
	}
	resp, _ := h.Handle(ctx, redriven)
	if err := esm.Settle(ctx, s.sqs, s.pair.URL, redriven, resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redriven message failed: %v\n%s", failed(resp), logs.String())
	}
	_, applied, _, _, _ := s.target.snapshot()
	if runs["charge"] != 1 || runs["email"] != 1 || len(applied["c1"]) != 1 {
		t.Errorf("charge ran %d, email %d, forward applied %d times; want each once (charge before the crash, the rest on the redrive)",
			runs["charge"], runs["email"], len(applied["c1"]))
	}
}
