package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/logtest"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/worker"
)

const (
	testARN = "arn:aws:sqs:us-east-1:123456789012:hp-acme.fifo"
	testURL = "https://sqs.us-east-1.amazonaws.com/123456789012/hp-acme.fifo"
	testDLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/hp-acme-dlq.fifo"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock                     { return &clock{t: time.Now().Truncate(time.Second)} }
func (c *clock) Now() time.Time            { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration)   { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func fixedJitter(f float64) func() float64 { return func() float64 { return f } }

// fakeSQS records dead letters and visibility changes.
type fakeSQS struct {
	mu         sync.Mutex
	sent       []sentMessage
	visibility map[string]int32 // receipt handle → seconds
	sendErr    error
	visErr     error
}

type sentMessage struct {
	url string
	msg queue.Message
}

func newFakeSQS() *fakeSQS { return &fakeSQS{visibility: map[string]int32{}} }

func (f *fakeSQS) Send(_ context.Context, url string, m queue.Message) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sendErr != nil {
		return "", f.sendErr
	}
	f.sent = append(f.sent, sentMessage{url, m})
	return fmt.Sprintf("dlq-%d", len(f.sent)), nil
}

func (f *fakeSQS) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.visErr != nil {
		return nil, f.visErr
	}
	if aws.ToString(in.QueueUrl) != testURL {
		return nil, fmt.Errorf("unexpected queue %s", aws.ToString(in.QueueUrl))
	}
	if len(in.Entries) > 10 {
		return nil, errors.New("more than 10 entries")
	}
	for _, e := range in.Entries {
		f.visibility[aws.ToString(e.ReceiptHandle)] = e.VisibilityTimeout
	}
	return &sqs.ChangeMessageVisibilityBatchOutput{Successful: make([]types.ChangeMessageVisibilityBatchResultEntry, len(in.Entries))}, nil
}

// env returns the envelope of event id in conversation conv.
func env(id, conv string) *envelope.Envelope {
	e := &envelope.Envelope{
		Version: envelope.Version, Key: "acme#stripe#" + id, Tenant: "acme", Provider: "stripe",
		EventID: id, Type: "invoice.paid", Conversation: conv, ReceivedAt: time.Now().UTC(),
		Headers: map[string]string{"content-type": "application/json"},
	}
	e.SetBody([]byte(`{"id":"` + id + `","secret_card":"4242"}`))
	return e
}

// sequences gives each message id the SequenceNumber SQS FIFO would: one
// per message, increasing in the order messages are first seen, the same
// on every redelivery.
var sequences = struct {
	sync.Mutex
	n    int
	byID map[string]int
}{byID: map[string]int{}}

func sequenceOf(messageID string) string {
	sequences.Lock()
	defer sequences.Unlock()
	n, ok := sequences.byID[messageID]
	if !ok {
		sequences.n++
		n = sequences.n
		sequences.byID[messageID] = n
	}
	return strconv.Itoa(n)
}

// fenceOf is the fence of rec(t, e, attempt), as the worker builds it.
func fenceOf(t testing.TB, e *envelope.Envelope, attempt int) ledger.Fence {
	t.Helper()
	f, err := ledger.NewFence(e.Tenant, e.Conversation, sequenceOf("m-"+e.EventID), attempt, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Origin = e.ReceivedAt.UTC().Format(time.RFC3339Nano)
	return f
}

// reenqueued is e as the ingest enqueues it again (a sender's retry after
// a recording write that failed, past SQS's 5-minute deduplication): the
// same event, a new envelope with its own receivedAt.
func reenqueued(e *envelope.Envelope) *envelope.Envelope {
	again := *e
	again.ReceivedAt = e.ReceivedAt.Add(time.Minute)
	return &again
}

// rec builds the SQS record Lambda would deliver for e.
func rec(t testing.TB, e *envelope.Envelope, receiveCount int) events.SQSMessage {
	t.Helper()
	return recAs(t, "m-"+e.EventID, e, receiveCount)
}

// recAs builds the record of message id holding e: another id is another
// message (a later SequenceNumber), as when an event is enqueued twice.
func recAs(t testing.TB, id string, e *envelope.Envelope, receiveCount int) events.SQSMessage {
	t.Helper()
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{
		MessageId:     id,
		ReceiptHandle: "rh-" + strings.TrimPrefix(id, "m-"),
		Body:          string(b),
		Attributes: map[string]string{
			"ApproximateReceiveCount": strconv.Itoa(receiveCount),
			"MessageGroupId":          e.Conversation,
			"SequenceNumber":          sequenceOf(id),
		},
		EventSourceARN: testARN,
		EventSource:    "aws:sqs",
		AWSRegion:      "us-east-1",
	}
}

// batch returns an event of one first delivery per envelope.
func batch(t testing.TB, envs ...*envelope.Envelope) events.SQSEvent {
	var ev events.SQSEvent
	for _, e := range envs {
		ev.Records = append(ev.Records, rec(t, e, 1))
	}
	return ev
}

func failed(resp events.SQSEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// outcomes maps messageId → outcome of the "message" lines.
func outcomes(t testing.TB, logs *logtest.Buffer) map[string]string {
	out := map[string]string{}
	for _, m := range logs.Lines(t) {
		if m["msg"] == "message" {
			out[m["messageId"].(string)] = m["outcome"].(string)
		}
	}
	return out
}

// sequence returns the outcomes of the "message" lines in order.
func sequence(t testing.TB, logs *logtest.Buffer) []string {
	var out []string
	for _, m := range logs.Lines(t) {
		if m["msg"] == "message" {
			out = append(out, m["outcome"].(string))
		}
	}
	return out
}

// fixture is a handler on fakes with an in-memory ledger.
type fixture struct {
	h      *worker.Handler
	sqs    *fakeSQS
	ledger *ledger.Memory
	clock  *clock
	logs   *logtest.Buffer
	reg    *worker.Registry
}

func newFixture(t testing.TB, mod func(c *worker.Config)) *fixture {
	f := &fixture{sqs: newFakeSQS(), clock: newClock(), logs: &logtest.Buffer{}, reg: worker.NewRegistry()}
	f.ledger = ledger.NewMemory(ledger.Options{Now: f.clock.Now})
	cfg := worker.Config{
		Ledger:     f.ledger,
		Handlers:   f.reg,
		DLQ:        f.sqs,
		Visibility: f.sqs,
		Retry:      worker.Retry{Base: 4 * time.Second, Jitter: fixedJitter(0)},
		Now:        f.clock.Now,
		Logger:     slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mod != nil {
		mod(&cfg)
	}
	f.h = worker.New(cfg)
	return f
}
