package esm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
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
// a FIFO queue with ReportBatchItemFailures: receive batches of up to BatchSize
// (no batching window), invoke the function with a deadline of its timeout,
// delete only the messages not reported in batchItemFailures, and leave the
// rest to their visibility timeout (SQS then redelivers them, and moves them
// to the DLQ after maxReceiveCount). A function error, or a function still
// running at its timeout, fails the whole batch: nothing is deleted.
//
// Client is any ReceiveMessage/DeleteMessageBatch implementation, so a test
// or the chaos run can wrap an *sqs.Client to lose the mapping's deletes.
type Poller struct {
	Client   pollAPI
	QueueURL string
	Region   string
	Handler  SQSHandler
	// Timeout is the function timeout: the invocation's deadline, after
	// which the batch is failed whole, whatever the handler later returns.
	Timeout time.Duration
	// Wait is the long-poll wait in seconds (default 1: snappy locally).
	Wait int32
	// BatchSize is the mapping's BatchSize (default 10, a FIFO mapping's most).
	BatchSize int32
	// Concurrency is the mapping's ScalingConfig.MaximumConcurrency: how
	// many batches are received and invoked at once (default 1). On a FIFO
	// queue Lambda runs up to that many invocations, fewer when fewer
	// message groups have messages to deliver: a batch held by one group
	// never stops the others' messages from reaching another invocation.
	// Here as there, a poller finds the groups in flight locked by SQS.
	Concurrency int
	Logger      *slog.Logger
}

// Run polls until ctx is done, with Concurrency pollers.
func (p *Poller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range max(p.Concurrency, 1) {
		wg.Go(func() { p.poll(ctx) })
	}
	wg.Wait()
}

// poll is one poller: receive a batch, invoke, settle, until ctx is done.
func (p *Poller) poll(ctx context.Context) {
	wait := p.Wait
	if wait == 0 {
		wait = 1
	}
	for ctx.Err() == nil {
		ev, err := Receive(ctx, p.Client, p.QueueURL, ReceiveOptions{Max: p.BatchSize, WaitSeconds: wait, Region: p.Region})
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

// invoke runs one batch and deletes what succeeded (see Invoke).
func (p *Poller) invoke(ctx context.Context, ev events.SQSEvent) {
	resp, err := Invoke(ctx, p.Handler, ev, p.Timeout)
	if errors.Is(err, ErrTimeout) {
		p.Logger.Error("worker invocation timed out; nothing is deleted, the whole batch returns after its visibility timeout",
			slog.String("queueUrl", p.QueueURL), slog.Int("messages", len(ev.Records)), slog.Int64("timeoutMs", p.Timeout.Milliseconds()))
		return
	}
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

// ErrTimeout is Invoke's error for a handler still running at the function
// timeout.
var ErrTimeout = errors.New("invocation timed out")

// Invoke calls h with ev as Lambda invokes a function with the given
// timeout: h's context ends at the deadline, and a handler that has not
// returned by then is abandoned (its goroutine runs on, as a timed-out
// instance's goroutines may) and Invoke returns ErrTimeout, so the caller
// deletes nothing and the whole batch returns after its visibility
// timeout, as it does in AWS. Otherwise it returns h's answer.
func Invoke(ctx context.Context, h SQSHandler, ev events.SQSEvent, timeout time.Duration) (events.SQSEventResponse, error) {
	deadline := time.Now().Add(timeout)
	ictx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	type result struct {
		resp events.SQSEventResponse
		err  error
		late bool
	}
	done := make(chan result, 1) // the abandoned handler must not block on it
	go func() {
		resp, err := h(ictx, ev)
		done <- result{resp, err, !time.Now().Before(deadline)}
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var r result
	select {
	case r = <-done:
	case <-timer.C:
		select {
		case r = <-done: // returned just before the deadline; late says whether it made it
		default:
			r.late = true
		}
	}
	if r.late {
		return events.SQSEventResponse{}, fmt.Errorf("%w after %v", ErrTimeout, timeout)
	}
	return r.resp, r.err
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
