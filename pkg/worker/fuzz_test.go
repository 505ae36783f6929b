package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/worker"
)

// FuzzRecord hands the worker one SQS record of arbitrary body and
// attributes (a valid envelope in the seeds, then anything). The worker must
// lose nothing and decide once: the record is either applied (its handler
// ran and it is not reported failed), reported failed for a retry with a
// backoff, or dead-lettered with a reason and its body byte for byte, never
// two of these; and the body never reaches the log.
func FuzzRecord(f *testing.F) {
	for _, e := range []string{"evt_1", "evt_2"} {
		r := rec(f, env(e, "conv-"+e), 1)
		f.Add(r.Body, r.Attributes["MessageGroupId"], r.Attributes["SequenceNumber"], "1", false)
		f.Add(r.Body, r.Attributes["MessageGroupId"], r.Attributes["SequenceNumber"], "3", true)
		f.Add(r.Body, "", "", "", false)
		f.Add(strings.Replace(r.Body, `"v":`, `"v":9`, 1), "g", "x", "-1", false)
	}
	f.Add(`{"not":"an envelope"}`, "conv-A", "1", "4", false)
	f.Add(``, "conv-A", "18446744073709551616000000000", "1", false)
	f.Fuzz(func(t *testing.T, body, group, seq, receives string, fail bool) {
		fx := newFixture(t, nil)
		ran := 0
		fx.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			ran++
			if fail {
				return worker.Permanent(errors.New("rejected by the handler"))
			}
			return nil
		})
		r := events.SQSMessage{
			MessageId: "m-fuzz", ReceiptHandle: "rh-fuzz", Body: body,
			Attributes:     map[string]string{"MessageGroupId": group, "SequenceNumber": seq, "ApproximateReceiveCount": receives},
			EventSourceARN: testARN, EventSource: "aws:sqs", AWSRegion: "us-east-1",
		}
		resp, err := fx.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
		if err != nil {
			t.Fatalf("Handle() error = %v: a bad record must not fail the whole batch", err)
		}
		failed := len(resp.BatchItemFailures) == 1 && resp.BatchItemFailures[0].ItemIdentifier == r.MessageId
		dead := len(fx.sqs.sent)
		switch {
		case len(resp.BatchItemFailures) > 1 || dead > 1:
			t.Fatalf("%d failures and %d dead letters for one record", len(resp.BatchItemFailures), dead)
		case failed && dead == 1:
			t.Fatal("the record is both reported failed (SQS delivers it again) and dead-lettered")
		case failed:
			if _, ok := fx.sqs.visibility[r.ReceiptHandle]; !ok {
				t.Error("a record reported failed got no backoff")
			}
		case dead == 1:
			s := fx.sqs.sent[0]
			if string(s.msg.Body) != body || s.msg.Attributes[worker.AttrReason] == "" {
				t.Errorf("dead letter body %q reason %q, want the record's body and a reason", s.msg.Body, s.msg.Attributes[worker.AttrReason])
			}
		case ran == 0:
			t.Fatal("the record was neither applied, retried nor dead-lettered: it is lost")
		}
		// (An escaped group id such as "\u0000…" must not look like a body
		// of zeros: Values undoes the escapes.)
		echoed := strings.Contains(group, body) || strings.Contains(seq, body) || strings.Contains(receives, body)
		if len(body) >= 32 && !echoed && strings.Contains(fx.logs.Values(t), body) {
			t.Fatalf("log holds the body: %s", fx.logs.String())
		}
	})
}
