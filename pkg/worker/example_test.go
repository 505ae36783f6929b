package worker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/worker"
)

// nopQueue stands in for SQS in the example: nothing is dead-lettered or
// retried there.
type nopQueue struct{}

func (nopQueue) Send(context.Context, string, queue.Message) (string, error) { return "", nil }
func (nopQueue) ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	return &sqs.ChangeMessageVisibilityBatchOutput{}, nil
}

// A custom effect: email a receipt once per paid invoice, however often
// the event is delivered, and keep the customer's latest state.
func Example() {
	reg := worker.NewRegistry()
	reg.Handle("stripe", "invoice.paid", func(ctx context.Context, ev *worker.Event) error {
		err := ev.Once(ctx, "email-receipt", func(ctx context.Context, idempotencyKey string) error {
			// Pass idempotencyKey to the mail API so a repeat is absorbed there.
			fmt.Println("emailing the receipt for", ev.EventID)
			return nil
		})
		if err != nil {
			return err
		}
		_, err = ev.ApplyIfNewer(ctx, "customer:cus_42", ev.ReceivedAt.UnixMilli(), []byte(`{"paid":true}`))
		return err
	})
	reg.Handle("stripe", worker.Any, worker.Discard) // other Stripe types are dropped on purpose

	h := worker.New(worker.Config{
		Ledger:     ledger.NewMemory(ledger.Options{}),
		Handlers:   reg,
		DLQ:        nopQueue{},
		Visibility: nopQueue{},
	})

	for i, seq := range []string{"1", "2"} { // the event was enqueued twice, a minute apart
		e := envelope.Envelope{
			Version: envelope.Version, Key: "acme#stripe#evt_1", Tenant: "acme", Provider: "stripe",
			EventID: "evt_1", Type: "invoice.paid", Conversation: "cus_42",
			ReceivedAt: time.Date(2026, 11, 22, 12, i, 0, 0, time.UTC),
		}
		e.SetBody([]byte(`{"id":"evt_1"}`))
		body, _ := e.Encode()
		msg := events.SQSMessage{
			MessageId: "m" + seq, Body: string(body),
			Attributes:     map[string]string{"MessageGroupId": "cus_42", "SequenceNumber": seq, "ApproximateReceiveCount": "1"},
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:hookpack-acme.fifo",
		}
		resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}})
		fmt.Println("failed messages:", len(resp.BatchItemFailures))
	}
	// Output:
	// emailing the receipt for evt_1
	// failed messages: 0
	// failed messages: 0
}
