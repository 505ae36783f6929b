package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// stack is a real pipeline front half on moto: SSM credentials, DynamoDB
// claims, SQS FIFO queue.
type stack struct {
	handler *Handler
	sqs     *sqs.Client
	pair    provision.Pair
	faults  *faultySender
}

// faultySender fails the next n send calls, then passes through to SQS.
type faultySender struct {
	mu   sync.Mutex
	next sender
	n    int
}

func (f *faultySender) SendBatch(ctx context.Context, url string, msgs []queue.Message) []error {
	f.mu.Lock()
	fail := f.n > 0
	if fail {
		f.n--
	}
	f.mu.Unlock()
	if fail {
		return slices.Repeat([]error{errors.New("injected: connection reset")}, len(msgs))
	}
	return f.next.SendBatch(ctx, url, msgs)
}

func newStack(t *testing.T, now func() time.Time) *stack {
	t.Helper()
	// Keys go to DynamoDB Local: moto's conditional writes are not atomic
	// under concurrency, and the burst test depends on DynamoDB's semantics.
	e := emulate(t, awstest.DynamoDBLocal(t), 5, map[string]tenant.Inbound{"acme": {Providers: map[string]webhook.Config{"github": {Secrets: []string{acmeGitHubSecret}}}}})
	creds := e.credentials()
	faults := &faultySender{next: queue.NewSQS(e.sqs)}
	h := New(Config{
		Providers: provider.Registry(),
		Tenants: tenant.NewCache(func(ctx context.Context, id string) (tenant.Inbound, error) {
			return creds.Inbound(ctx, id, provider.Registry())
		}, 0, 0, nil),
		Claims:           idempotency.NewDynamoDB(e.ddb, e.name, idempotency.Options{Now: now}),
		Queue:            faults,
		QueueURLTemplate: e.pair.URL, // one tenant: the template is the URL itself
		Now:              now,
		Logger:           slog.New(slog.DiscardHandler),
	})
	return &stack{handler: h, sqs: e.sqs, pair: e.pair, faults: faults}
}

// drain receives every message on the queue, deleting each.
func (s *stack) drain(t *testing.T) []*envelope.Envelope {
	t.Helper()
	var out []*envelope.Envelope
	for empty := 0; empty < 2; {
		r, err := s.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(s.pair.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 0,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range r.Messages {
			e, err := envelope.Decode([]byte(aws.ToString(m.Body)))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
			if _, err := s.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(s.pair.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// Fifty concurrent deliveries of one event all read its key free (each
// check waits for the others) and each sends it: the FIFO queue's
// deduplication id keeps one message, one completion wins on DynamoDB and
// the others find it done with the same digest, and every sender gets 200
// accepted after its own send succeeded.
func TestIntegrationFiftyConcurrentDeliveriesQueueOnce(t *testing.T) {
	s := newStack(t, time.Now)
	req := githubRequest("acme", acmeGitHubSecret, githubBody, "burst-1")
	const n = 50
	var checked sync.WaitGroup
	checked.Add(n)
	s.handler.cfg.Claims = barrierClaims{s.handler.cfg.Claims, &checked}
	statuses := make(chan string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, _ := s.handler.Handle(context.Background(), req)
			statuses <- fmt.Sprint(resp.StatusCode, " ", strings.Contains(resp.Body, `"status":"accepted"`))
		}()
	}
	close(start)
	wg.Wait()
	close(statuses)
	count := map[string]int{}
	for st := range statuses {
		count[st]++
	}
	if count["200 true"] != n {
		t.Errorf("answers (status, accepted) = %v, want %d 200 accepted", count, n)
	}
	if got := s.drain(t); len(got) != 1 || got[0].EventID != "burst-1" {
		t.Fatalf("queue holds %d messages, want exactly 1", len(got))
	}
}

func TestIntegrationSendFailureAfterClaimThenRetry(t *testing.T) {
	s := newStack(t, time.Now)
	s.faults.n = sendRounds
	req := githubRequest("acme", acmeGitHubSecret, githubBody, "fault-1")
	if resp, _ := s.handler.Handle(context.Background(), req); resp.StatusCode != 503 {
		t.Fatalf("first attempt = %d, want 503", resp.StatusCode)
	}
	if resp, _ := s.handler.Handle(context.Background(), req); resp.StatusCode != 200 {
		t.Fatalf("retry = %d %s, want 200", resp.StatusCode, resp.Body)
	}
	if resp, _ := s.handler.Handle(context.Background(), req); resp.StatusCode != 200 {
		t.Fatalf("duplicate = %d, want 200", resp.StatusCode)
	}
	if got := s.drain(t); len(got) != 1 {
		t.Fatalf("queue holds %d messages, want exactly 1", len(got))
	}
}

// A delivery whose completion failed after its send (or that is still
// running) leaves the key free: the sender's next delivery sends the event
// again, and SQS drops the copy within its 5 minutes.
func TestIntegrationResendAfterALostCompletionQueuesOnce(t *testing.T) {
	s := newStack(t, time.Now)
	store := s.handler.cfg.Claims
	s.handler.cfg.Claims = failingCompletions{store}
	req := githubRequest("acme", acmeGitHubSecret, githubBody, "lost-1")
	if resp, _ := s.handler.Handle(context.Background(), req); resp.StatusCode != 200 || !strings.Contains(resp.Body, "accepted") {
		t.Fatalf("first delivery = %d %s, want 200 accepted (queued, its completion failed)", resp.StatusCode, resp.Body)
	}
	s.handler.cfg.Claims = store
	for _, want := range []string{"accepted", "duplicate"} {
		if resp, _ := s.handler.Handle(context.Background(), req); resp.StatusCode != 200 || !strings.Contains(resp.Body, want) {
			t.Fatalf("delivery = %d %s, want 200 %s", resp.StatusCode, resp.Body, want)
		}
	}
	if got := s.drain(t); len(got) != 1 {
		t.Fatalf("queue holds %d messages, want 1", len(got))
	}
}

// failingCompletions fails every completion, as a throttled table would.
type failingCompletions struct{ claimStore }

func (failingCompletions) Complete(context.Context, string, string) error {
	return errors.New("dynamodb: ProvisionedThroughputExceededException")
}

func TestIntegrationRejectedWritesNothing(t *testing.T) {
	s := newStack(t, time.Now)
	body := func(id string) string { return strings.Replace(githubBody, "opened", "opened-"+id, 1) }
	for _, req := range []events.APIGatewayV2HTTPRequest{
		githubRequest("acme", globexSecret, body("rej-1"), "rej-1"),
		withBody(githubRequest("acme", acmeGitHubSecret, body("rej-2"), "rej-2"), body("rej-2")+"x"),
		withoutHeader(githubRequest("acme", acmeGitHubSecret, body("rej-3"), "rej-3"), "x-hub-signature-256"),
	} {
		if resp, _ := s.handler.Handle(context.Background(), req); resp.StatusCode != 401 {
			t.Errorf("Handle() = %d, want 401", resp.StatusCode)
		}
	}
	if got := s.drain(t); len(got) != 0 {
		t.Fatalf("queue holds %d messages, want 0", len(got))
	}
	// Nothing was claimed either: the same deliveries, correctly signed,
	// are accepted as new.
	for _, id := range []string{"rej-1", "rej-2", "rej-3"} {
		resp, _ := s.handler.Handle(context.Background(), githubRequest("acme", acmeGitHubSecret, body(id), id))
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, "accepted") {
			t.Errorf("valid %s = %d %s, want 200 accepted", id, resp.StatusCode, resp.Body)
		}
	}
}
