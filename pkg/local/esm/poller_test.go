package esm

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/local/logtest"
)

// fakeSQS records the mapping's deletes; it never has anything to receive.
type fakeSQS struct {
	mu      sync.Mutex
	deleted []string // message ids, in delete order
	calls   int
}

func (f *fakeSQS) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return &sqs.ReceiveMessageOutput{}, nil
}

func (f *fakeSQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	for _, e := range in.Entries {
		f.deleted = append(f.deleted, aws.ToString(e.Id))
	}
	return &sqs.DeleteMessageBatchOutput{}, nil
}

// TestPollerInvokeTimeout: the mapping settles a batch only when the
// handler returns within its timeout; a handler still running at the
// deadline (whether it returns later or never) fails the whole batch, as
// Lambda's timeout does, and the poller says so in one log line.
func TestPollerInvokeTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	ok := events.SQSEventResponse{}
	tests := []struct {
		name        string
		handler     func(ctx context.Context, release <-chan struct{}) (events.SQSEventResponse, error)
		wantDeleted []string
		wantTimeout bool
	}{{
		name:        "returns in time: every message is deleted",
		handler:     func(context.Context, <-chan struct{}) (events.SQSEventResponse, error) { return ok, nil },
		wantDeleted: []string{"m1", "m2"},
	}, {
		name: "returns in time with a failed item: the others are deleted",
		handler: func(context.Context, <-chan struct{}) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "m1"}}}, nil
		},
		wantDeleted: []string{"m2"},
	}, {
		name: "returns an error in time: nothing is deleted",
		handler: func(context.Context, <-chan struct{}) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, errors.New("boom")
		},
	}, {
		name: "returns success after its deadline: nothing is deleted",
		handler: func(ctx context.Context, _ <-chan struct{}) (events.SQSEventResponse, error) {
			<-ctx.Done()
			time.Sleep(20 * time.Millisecond)
			return ok, nil
		},
		wantTimeout: true,
	}, {
		name: "never returns: abandoned, nothing is deleted",
		handler: func(_ context.Context, release <-chan struct{}) (events.SQSEventResponse, error) {
			<-release
			return ok, nil
		},
		wantTimeout: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := &fakeSQS{}
			var logs logtest.Buffer
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			p := &Poller{
				Client: client, QueueURL: "http://127.0.0.1/000000000000/q.fifo", Timeout: timeout,
				Handler: func(ctx context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
					return tt.handler(ctx, release)
				},
				Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
			}
			ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", ReceiptHandle: "r1"}, {MessageId: "m2", ReceiptHandle: "r2"}}}
			returned := make(chan struct{})
			go func() {
				p.invoke(context.Background(), ev)
				close(returned)
			}()
			select {
			case <-returned:
			case <-time.After(timeout + 5*time.Second):
				t.Fatalf("invoke still waiting %v after the handler's deadline", 5*time.Second)
			}
			// A late answer must not be settled after invoke gave up.
			time.Sleep(50 * time.Millisecond)
			client.mu.Lock()
			deleted := slices.Clone(client.deleted)
			client.mu.Unlock()
			if !slices.Equal(deleted, tt.wantDeleted) {
				t.Errorf("deleted %q, want %q", deleted, tt.wantDeleted)
			}
			var timedOut int
			for _, l := range logs.Lines(t) {
				if msg, _ := l["msg"].(string); strings.Contains(msg, "timed out") {
					timedOut++
					if !strings.Contains(msg, "visibility timeout") || l["messages"] != float64(2) {
						t.Errorf("timeout log line = %v, want the batch's size and that it returns after its visibility timeout", l)
					}
				}
			}
			if want := map[bool]int{true: 1}[tt.wantTimeout]; timedOut != want {
				t.Errorf("logged %d timeout lines, want %d:\n%s", timedOut, want, logs.String())
			}
		})
	}
}

// batchesSQS hands out one single-message batch per receive, n in all,
// then nothing.
type batchesSQS struct {
	fakeSQS
	n int
}

func (f *batchesSQS) ReceiveMessage(ctx context.Context, _ *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
		f.mu.Lock()
		return &sqs.ReceiveMessageOutput{}, nil
	}
	f.n--
	id := aws.String("m" + strconv.Itoa(f.n))
	return &sqs.ReceiveMessageOutput{Messages: []types.Message{{MessageId: id, ReceiptHandle: id, Body: aws.String("{}")}}}, nil
}

// TestPollerConcurrency: the poller runs Concurrency invocations at once
// (the mapping's MaximumConcurrency), so a batch held by a slow invocation
// never holds the next batches; one by default.
func TestPollerConcurrency(t *testing.T) {
	for _, tt := range []struct{ concurrency, want int }{{0, 1}, {1, 1}, {3, 3}} {
		t.Run(strconv.Itoa(tt.concurrency), func(t *testing.T) {
			client := &batchesSQS{n: 5}
			var mu sync.Mutex
			running, most := 0, 0
			release := make(chan struct{})
			p := &Poller{
				Client: client, QueueURL: "http://127.0.0.1/000000000000/q.fifo", Timeout: 10 * time.Second, Concurrency: tt.concurrency,
				Handler: func(ctx context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
					mu.Lock()
					running++
					most = max(most, running)
					mu.Unlock()
					<-release
					mu.Lock()
					running--
					mu.Unlock()
					return events.SQSEventResponse{}, nil
				},
				Logger: slog.New(slog.DiscardHandler),
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { p.Run(ctx); close(done) }()
			// Every poller receives and blocks; then none more may start.
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				n := running
				mu.Unlock()
				if n >= tt.want {
					break
				}
			}
			time.Sleep(100 * time.Millisecond)
			mu.Lock()
			got := most
			mu.Unlock()
			close(release)
			cancel()
			<-done
			if got != tt.want {
				t.Errorf("Concurrency %d: %d invocations at once, want %d", tt.concurrency, got, tt.want)
			}
		})
	}
}
