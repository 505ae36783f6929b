package worker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go/middleware"

	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/awscount"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

// requestCounter counts AWS requests (awscount) and, when asked to, the
// write capacity DynamoDB reports consuming.
type requestCounter struct {
	req   *awscount.Requests
	mu    sync.Mutex
	units float64 // write capacity units reported by successful writes
}

func newRequestCounter() *requestCounter { return &requestCounter{req: awscount.New()} }

func (c *requestCounter) install(cfg *aws.Config) { *cfg = c.req.Install(*cfg) }

// installCapacity makes every DynamoDB write ask for its consumed capacity
// (ReturnConsumedCapacity=TOTAL, which is free) and adds up what the
// successful ones report. A rejected conditional write is billed too, but
// its ConditionalCheckFailedException carries no ConsumedCapacity.
func (c *requestCounter) installCapacity(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("countCapacity",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				switch p := in.Parameters.(type) {
				case *dynamodb.PutItemInput:
					p.ReturnConsumedCapacity = ddbtypes.ReturnConsumedCapacityTotal
				case *dynamodb.UpdateItemInput:
					p.ReturnConsumedCapacity = ddbtypes.ReturnConsumedCapacityTotal
				case *dynamodb.DeleteItemInput:
					p.ReturnConsumedCapacity = ddbtypes.ReturnConsumedCapacityTotal
				}
				out, md, err := next.HandleInitialize(ctx, in)
				var cc *ddbtypes.ConsumedCapacity
				switch r := out.Result.(type) {
				case *dynamodb.PutItemOutput:
					cc = r.ConsumedCapacity
				case *dynamodb.UpdateItemOutput:
					cc = r.ConsumedCapacity
				case *dynamodb.DeleteItemOutput:
					cc = r.ConsumedCapacity
				}
				if cc != nil {
					c.mu.Lock()
					c.units += aws.ToFloat64(cc.CapacityUnits)
					c.mu.Unlock()
				}
				return out, md, err
			}), middleware.After)
	})
}

// take returns and resets the counts and reported write units.
func (c *requestCounter) take() (map[string]int, float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.units
	c.units = 0
	return c.req.Take(), u
}

// okTarget answers every delivery 200 and counts them.
func okTarget(t *testing.T) (*httptest.Server, *int) {
	var mu sync.Mutex
	posts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posts++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, &posts
}

// TestAWSRequestsPerMessage holds the worker's request budget with the
// production wiring (NewAWS) on moto: a message with the forward effect
// costs exactly 1 DynamoDB write (Claim's UpdateItem: its fence is the
// message's SequenceNumber, and SQS deleting the message completes it) and
// no SSM call once warm; the event enqueued again costs the rejected Claim.
// Write units are held by TestLedgerWriteUnitsPerMessage instead: moto
// reports a fixed 1.0 for every write, whatever the item.
func TestAWSRequestsPerMessage(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(t, awstest.Moto(t))
	name := awstest.Name(t)
	if err := provision.Ledger(ctx, dynamodb.NewFromConfig(cfg), name); err != nil {
		t.Fatal(err)
	}
	sqsClient := sqs.NewFromConfig(cfg)
	pair, err := provision.QueuePair(ctx, sqsClient, name, provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	srv, posts := okTarget(t)
	out := tenant.Outbound{TargetURL: srv.URL, Secrets: []string{outboundSecret}}
	if err := tenant.NewSSM(ssm.NewFromConfig(cfg), "/"+name).Put(ctx, "acme", tenant.Inbound{}, out, "", nil); err != nil {
		t.Fatal(err)
	}

	// Only the handler's clients count; the test's own receives, visibility
	// changes and deletes go through sqsClient.
	counter := newRequestCounter()
	counter.install(&cfg)
	h := worker.NewAWS(cfg, worker.Settings{LedgerTable: name, ParameterPrefix: "/" + name, QueueURLTemplate: pair.URL}, slog.New(slog.DiscardHandler))
	if got, _ := counter.take(); len(got) != 0 {
		t.Fatalf("building the handler made AWS requests: %v", got)
	}

	q := queue.NewSQS(sqsClient)
	send := func(id string) {
		t.Helper()
		e := env(id, "c1")
		b, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Send(ctx, pair.URL, queue.Message{GroupID: "c1", DeduplicationID: id, Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	receive := func() events.SQSEvent {
		t.Helper()
		ev, err := esm.Receive(ctx, sqsClient, pair.URL, esm.ReceiveOptions{})
		if err != nil || len(ev.Records) != 1 {
			t.Fatalf("receive = %d records, %v; want 1", len(ev.Records), err)
		}
		return ev
	}
	handle := func(step string, ev events.SQSEvent, want map[string]int) {
		t.Helper()
		resp, _ := h.Handle(ctx, ev)
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%s: failures %v", step, failed(resp))
		}
		if got, _ := counter.take(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: AWS requests = %v, want %v", step, got, want)
		}
	}

	send("e1")
	ev := receive()
	// Cold, an instance reads the tenant's outbound credentials and its
	// queue's creation time (the fence's queue incarnation) once.
	handle("cold message", ev, map[string]int{"SSM.GetParameter": 1, "SQS.GetQueueAttributes": 1, "DynamoDB.UpdateItem": 1})
	if err := esm.Settle(ctx, sqsClient, pair.URL, ev, events.SQSEventResponse{}); err != nil {
		t.Fatal(err)
	}

	send("e2")
	ev = receive()
	// Warm, a batch holding a message sent after the last read reads the
	// queue's creation time again (once per batch: a queue deleted and
	// created since would otherwise lend its messages the old incarnation).
	handle("warm message", ev, map[string]int{"DynamoDB.UpdateItem": 1, "SQS.GetQueueAttributes": 1})
	if err := esm.Settle(ctx, sqsClient, pair.URL, ev, events.SQSEventResponse{}); err != nil {
		t.Fatal(err)
	}

	// The same event enqueued again (another deduplication id): a later
	// message of the conversation, so e2's claim counts as completed.
	e := env("e2", "c1")
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Send(ctx, pair.URL, queue.Message{GroupID: "c1", DeduplicationID: "e2-again", Body: b}); err != nil {
		t.Fatal(err)
	}
	ev = receive()
	// Its claim finds the event done by e2's deletion, which holds within
	// one incarnation of the queue only: the queue is asked again (a
	// duplicate's path only; the ingest answers most duplicates itself).
	handle("the event enqueued again", ev, map[string]int{"DynamoDB.UpdateItem": 1, "SQS.GetQueueAttributes": 2})
	if err := esm.Settle(ctx, sqsClient, pair.URL, ev, events.SQSEventResponse{}); err != nil {
		t.Fatal(err)
	}
	if *posts != 2 {
		t.Errorf("target got %d posts, want 2 (the duplicate skipped)", *posts)
	}

	// WorkerCompleteEffects: the forward's completion is one more write.
	h = worker.NewAWS(cfg, worker.Settings{LedgerTable: name, ParameterPrefix: "/" + name, QueueURLTemplate: pair.URL, CompleteEffects: true}, slog.New(slog.DiscardHandler))
	send("e3")
	handle("cold message, CompleteEffects", receive(), map[string]int{"SSM.GetParameter": 1, "SQS.GetQueueAttributes": 1, "DynamoDB.UpdateItem": 2})
}

// TestLedgerWriteUnitsPerMessage holds the write capacity behind those
// requests on DynamoDB Local, which computes ConsumedCapacity as DynamoDB
// does: one write unit per single-item write of up to 1 KB (a transaction
// would bill two per item). A message with one effect consumes 1 write unit
// (it was 3: Take, Claim, Complete). The event enqueued again is billed 1
// for the rejected Claim, which reports no ConsumedCapacity, so that part is
// held by the request count. A failed delivery adds the effect's Fail and
// the message's attempt count.
func TestLedgerWriteUnitsPerMessage(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(t, awstest.DynamoDBLocal(t))
	table := awstest.Name(t)
	if err := provision.Ledger(ctx, dynamodb.NewFromConfig(cfg), table); err != nil {
		t.Fatal(err)
	}
	counter := newRequestCounter()
	counter.install(&cfg)
	counter.installCapacity(&cfg)

	fails := 1 // the third message's first delivery is answered 503
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), "evt_3") && fails > 0 {
			fails--
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	out := tenant.Outbound{TargetURL: srv.URL, Secrets: []string{outboundSecret}}
	outbound := tenant.NewCache(func(context.Context, string) (tenant.Outbound, error) { return out, nil }, 0, 0, nil)
	reg := worker.NewRegistry()
	reg.Handle(worker.Any, worker.Any, worker.Forward(outbound, forward.New(nil, nil)))
	fake := newFakeSQS()
	h := worker.New(worker.Config{
		Ledger:     ledger.NewDynamoDB(dynamodb.NewFromConfig(cfg), table, ledger.Options{}),
		Handlers:   reg,
		DLQ:        fake,
		Visibility: fake,
	})

	// A realistic event key: Stripe's event ids are 28 characters.
	e := env("evt_1NG8Du2eZvKYlo2CUI3ZRvXK", "cus_9s6XKzkNRiz8i3")
	e.Key = "acme#stripe#" + e.EventID
	flaky := env("evt_3NG8Du2eZvKYlo2CUI3ZRvXK", "cus_9s6XKzkNRiz8i3")
	flaky.Key = "acme#stripe#" + flaky.EventID
	steps := []struct {
		name     string
		record   events.SQSMessage
		failures int
		requests map[string]int
		units    float64
	}{
		{"message", rec(t, e, 1), 0, map[string]int{"DynamoDB.UpdateItem": 1}, 1},
		{"the event enqueued again", recAs(t, "m-again", reenqueued(e), 1), 0, map[string]int{"DynamoDB.UpdateItem": 1}, 0},
		// Claim, the effect's Fail, and the message's FailedAttempt count.
		{"failed delivery", rec(t, flaky, 1), 1, map[string]int{"DynamoDB.UpdateItem": 3}, 3},
		{"its retry", rec(t, flaky, 2), 0, map[string]int{"DynamoDB.UpdateItem": 1}, 1},
	}
	for _, st := range steps {
		resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{st.record}})
		if len(resp.BatchItemFailures) != st.failures {
			t.Fatalf("%s: failures %v, want %d", st.name, failed(resp), st.failures)
		}
		got, units := counter.take()
		if fmt.Sprint(got) != fmt.Sprint(st.requests) {
			t.Errorf("%s: AWS requests = %v, want %v", st.name, got, st.requests)
		}
		if units != st.units {
			t.Errorf("%s: reported write units = %v, want %v", st.name, units, st.units)
		}
	}
}
