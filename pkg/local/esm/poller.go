package esm

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// SQSHandler is the worker Lambda's handler signature.
type SQSHandler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

type pollAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

// Poller does for one queue what Lambda's SQS event source mapping does for
// a FIFO queue with ReportBatchItemFailures: receive batches of up to 10
// (no batching window), invoke the function with a deadline of its timeout,
// delete only the messages not reported in batchItemFailures, and leave the
// rest to their visibility timeout (SQS then redelivers them, and moves them
// to the DLQ after maxReceiveCount). A function error fails the whole batch.
type Poller struct {
	Client   pollAPI
	QueueURL string
	Region   string
	Handler  SQSHandler
	// Timeout is the function timeout (the invocation deadline).
	Timeout time.Duration
	// Wait is the long-poll wait in seconds (default 1: snappy locally).
	Wait   int32
	Logger *slog.Logger
}

// Run polls until ctx is done.
func (p *Poller) Run(ctx context.Context) {
	wait := p.Wait
	if wait == 0 {
		wait = 1
	}
	for ctx.Err() == nil {
		ev, err := Receive(ctx, p.Client, p.QueueURL, ReceiveOptions{WaitSeconds: wait, Region: p.Region})
		if err != nil {
			if ctx.Err() == nil {
				p.Logger.Error("poller receive failed", slog.String("queueUrl", p.QueueURL), slog.String("error", err.Error()))
				sleep(ctx, time.Second)
			}
			continue
		}
		if len(ev.Records) > 0 {
			p.invoke(ctx, ev)
		}
	}
}

// invoke runs one batch and deletes what succeeded.
func (p *Poller) invoke(ctx context.Context, ev events.SQSEvent) {
	ictx, cancel := context.WithTimeout(ctx, p.Timeout)
	resp, err := p.Handler(ictx, ev)
	cancel()
	if err != nil {
		p.Logger.Error("worker invocation failed; the whole batch returns to the queue", slog.String("error", err.Error()))
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := Settle(dctx, p.Client, p.QueueURL, ev, resp); err != nil {
		p.Logger.Error("poller delete failed; messages will be redelivered", slog.String("error", err.Error()))
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
