package worker_test

// Integration tests: the worker handler invoked with real SQSEvent batches
// received from moto's SQS FIFO queues, its effect ledger in moto's
// DynamoDB, outbound credentials in moto's SSM, and an httptest target that
// verifies signatures and deduplicates by Idempotency-Key.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/logtest"
	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
	"github.com/hookpack/hookpack/pkg/worker"
)

const outboundSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// offsetClock is real time plus an offset the test moves forward (to run
// leases out without sleeping).
type offsetClock struct{ off atomic.Int64 }

func (c *offsetClock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *offsetClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// target is a tenant's endpoint: it verifies every delivery, can be told to
// fail, and applies each Idempotency-Key once.
type target struct {
	*httptest.Server
	mu       sync.Mutex
	fail     map[string][]int    // event id → statuses for its next posts
	posts    map[string][]string // conversation → "<event>:<status>" in arrival order
	applied  map[string][]string // conversation → event ids, first application only
	keys     map[string][]string // event id → Idempotency-Key of every post
	seen     map[string]bool
	absorbed int
	invalid  int
}

func newTarget(t *testing.T) *target {
	tg := &target{fail: map[string][]int{}, posts: map[string][]string{}, applied: map[string][]string{}, keys: map[string][]string{}, seen: map[string]bool{}}
	tg.Server = httptest.NewServer(http.HandlerFunc(tg.serve))
	t.Cleanup(tg.Close)
	return tg
}

func (tg *target) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if err := devstack.VerifyForward(r.Header, body, []string{outboundSecret}); err != nil {
		tg.invalid++
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var b struct{ ID, Conv string }
	_ = json.Unmarshal(body, &b)
	key := r.Header.Get(forward.HeaderIdempotencyKey)
	tg.keys[b.ID] = append(tg.keys[b.ID], key)
	status := http.StatusOK
	if f := tg.fail[b.ID]; len(f) > 0 {
		status, tg.fail[b.ID] = f[0], f[1:]
	}
	tg.posts[b.Conv] = append(tg.posts[b.Conv], fmt.Sprintf("%s:%d", b.ID, status))
	if status != http.StatusOK {
		w.WriteHeader(status)
		return
	}
	if tg.seen[key] {
		tg.absorbed++ // a repeat: answered as before, applied once
		return
	}
	tg.seen[key] = true
	tg.applied[b.Conv] = append(tg.applied[b.Conv], b.ID)
}

func (tg *target) failNext(eventID string, statuses ...int) {
	tg.mu.Lock()
	tg.fail[eventID] = append(tg.fail[eventID], statuses...)
	tg.mu.Unlock()
}

func (tg *target) snapshot() (posts, applied, keys map[string][]string, absorbed, invalid int) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	cp := func(m map[string][]string) map[string][]string {
		out := map[string][]string{}
		for k, v := range m {
			out[k] = slices.Clone(v)
		}
		return out
	}
	return cp(tg.posts), cp(tg.applied), cp(tg.keys), tg.absorbed, tg.invalid
}

// stack is one tenant's queue pair, a ledger table, outbound credentials
// and a target, all on moto.
type stack struct {
	t      *testing.T
	sqs    *sqs.Client
	pair   provision.Pair
	q      *queue.SQS
	ledger *ledger.DynamoDB
	creds  *tenant.SSM
	clock  *offsetClock
	target *target
}

func newStack(t *testing.T) *stack {
	t.Helper()
	return newStackWith(t, provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: 10})
}

func newStackWith(t *testing.T, queues provision.PairOptions) *stack {
	t.Helper()
	ctx := context.Background()
	cfg := awstest.Config(t, awstest.Moto(t))
	s := &stack{t: t, sqs: sqs.NewFromConfig(cfg), clock: &offsetClock{}, target: newTarget(t)}
	var err error
	if s.pair, err = provision.QueuePair(ctx, s.sqs, awstest.Name(t), queues); err != nil {
		t.Fatal(err)
	}
	s.q = queue.NewSQS(s.sqs)
	ddb := dynamodb.NewFromConfig(cfg)
	table := awstest.Name(t)
	if err := provision.Ledger(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	s.ledger = ledger.NewDynamoDB(ddb, table, ledger.Options{Now: s.clock.Now})
	s.creds = tenant.NewSSM(ssm.NewFromConfig(cfg), "/"+awstest.Name(t))
	out := tenant.Outbound{TargetURL: s.target.URL + "/events", Secrets: []string{outboundSecret}, Timeout: "5s"}
	if err := s.creds.Put(ctx, "acme", tenant.Inbound{}, out, "", nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// workerConfig is the production wiring (NewAWS) on moto, with retries
// made immediate so tests need not wait for backoffs.
func (s *stack) workerConfig(logs io.Writer, reg *worker.Registry) worker.Config {
	if logs == nil {
		logs = io.Discard
	}
	return worker.Config{
		Ledger:           s.ledger,
		Handlers:         reg,
		DLQ:              s.q,
		Visibility:       s.sqs,
		QueueURLTemplate: s.pair.URL,
		Retry:            worker.Retry{Base: -1},
		Lease:            time.Minute,
		// The emulators on a loaded CI machine can take longer than the
		// 2 s a finishing call gets in Lambda; a visibility change cut
		// short leaves a message invisible for the queue's 30 s, a
		// FailedAttempt cut short miscounts: not what these tests test.
		SafetyMargin: 10 * time.Second, FinishTimeout: 10 * time.Second,
		Now:    s.clock.Now,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

func (s *stack) forwardHandler() worker.HandlerFunc {
	return worker.Forward(tenant.NewCache(s.creds.Outbound, 0, 0, nil), forward.New(nil, nil))
}

func (s *stack) forwardRegistry() *worker.Registry {
	reg := worker.NewRegistry()
	reg.Handle(worker.Any, worker.Any, s.forwardHandler())
	return reg
}

// envelope of event id in conversation conv, as ingest enqueues it.
func (s *stack) env(id, conv string) *envelope.Envelope {
	e := &envelope.Envelope{
		Version: envelope.Version, Key: "acme#hmac#" + id, Tenant: "acme", Provider: "hmac", EventID: id,
		Type: "order.updated", Conversation: conv, ReceivedAt: time.Now().UTC(),
		Headers: map[string]string{"content-type": "application/json"},
	}
	e.SetBody([]byte(fmt.Sprintf(`{"id":%q,"conv":%q}`, id, conv)))
	return e
}

// send enqueues e exactly as the ingest function does; dedup overrides the
// deduplication id (a replay).
func (s *stack) send(e *envelope.Envelope, dedup string) string {
	s.t.Helper()
	b, err := e.Encode()
	if err != nil {
		s.t.Fatal(err)
	}
	if dedup == "" {
		dedup = webhook.DeduplicationID(e.Key)
	}
	id, err := s.q.Send(context.Background(), s.pair.URL, queue.Message{GroupID: webhook.GroupID(e.Conversation, e.Key), DeduplicationID: dedup, Body: b})
	if err != nil {
		s.t.Fatal(err)
	}
	return id
}

func (s *stack) receive(url string) events.SQSEvent {
	s.t.Helper()
	ev, err := esm.Receive(context.Background(), s.sqs, url, esm.ReceiveOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return ev
}

// expire ends the visibility of ev's message now, as if its visibility
// timeout ran out.
func (s *stack) expire(ev events.SQSEvent) {
	s.t.Helper()
	if _, err := s.sqs.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(s.pair.URL), ReceiptHandle: aws.String(ev.Records[0].ReceiptHandle), VisibilityTimeout: 0,
	}); err != nil {
		s.t.Fatal(err)
	}
}

// redeliver plays ev's message coming back after its visibility timeout
// and the leases of its claims (2 minutes on the clock) ran out: it
// returns the message's second receive.
func (s *stack) redeliver(ev events.SQSEvent) events.SQSEvent {
	s.t.Helper()
	s.expire(ev)
	s.clock.Advance(2 * time.Minute)
	again := s.receive(s.pair.URL)
	if len(again.Records) != 1 || again.Records[0].Attributes["ApproximateReceiveCount"] != "2" {
		s.t.Fatalf("redelivery = %+v, want the same message, second receive", again.Records)
	}
	return again
}

// depth is the number of messages visible or in flight.
func (s *stack) depth(url string) int {
	s.t.Helper()
	out, err := s.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		s.t.Fatal(err)
	}
	var v, nv int
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessages"], &v)
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessagesNotVisible"], &nv)
	return v + nv
}

// drain plays the event source mapping: receive a batch, invoke the
// handler, delete what it did not report failed; until the queue is empty.
func (s *stack) drain(h *worker.Handler) {
	s.t.Helper()
	s.drainWithin(h, 100)
}

// drainWithin is drain giving up after batches receives that returned messages.
func (s *stack) drainWithin(h *worker.Handler, batches int) {
	s.t.Helper()
	ctx := context.Background()
	// batches counts the receives that returned messages; an empty one
	// (every message in flight) waits, up to twice the visibility timeout
	// since the last progress.
	progress, left := time.Now(), batches
	for left > 0 {
		ev := s.receive(s.pair.URL)
		if len(ev.Records) == 0 {
			if s.depth(s.pair.URL) == 0 {
				return
			}
			if time.Since(progress) > time.Minute {
				s.t.Fatalf("no message received for a minute (%d left)", s.depth(s.pair.URL))
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		left--
		progress = time.Now()
		resp, err := h.Handle(ctx, ev)
		if err != nil {
			s.t.Fatalf("Handle() error = %v", err)
		}
		if err := esm.Settle(ctx, s.sqs, s.pair.URL, ev, resp); err != nil {
			s.t.Fatal(err)
		}
	}
	s.t.Fatalf("queue not drained after %d batches (%d messages left)", batches, s.depth(s.pair.URL))
}

func TestOrderPerConversationUnderInjectedFailuresOnMoto(t *testing.T) {
	s := newStack(t)
	s.target.failNext("c1-e2", http.StatusServiceUnavailable)
	s.target.failNext("c2-e3", http.StatusInternalServerError, http.StatusBadGateway)
	s.target.failNext("c3-e1", http.StatusTooManyRequests)
	convs := []string{"c1", "c2", "c3"}
	for i := 1; i <= 4; i++ {
		for _, c := range convs {
			s.send(s.env(fmt.Sprintf("%s-e%d", c, i), c), "")
		}
	}
	s.drain(worker.New(s.workerConfig(nil, s.forwardRegistry())))

	posts, applied, _, absorbed, invalid := s.target.snapshot()
	want := map[string][]string{
		// A failed event is retried before anything later in its
		// conversation is even attempted.
		"c1": {"c1-e1:200", "c1-e2:503", "c1-e2:200", "c1-e3:200", "c1-e4:200"},
		"c2": {"c2-e1:200", "c2-e2:200", "c2-e3:500", "c2-e3:502", "c2-e3:200", "c2-e4:200"},
		"c3": {"c3-e1:429", "c3-e1:200", "c3-e2:200", "c3-e3:200", "c3-e4:200"},
	}
	for _, c := range convs {
		if !slices.Equal(posts[c], want[c]) {
			t.Errorf("posts of %s = %v, want %v", c, posts[c], want[c])
		}
		wantApplied := []string{c + "-e1", c + "-e2", c + "-e3", c + "-e4"}
		if !slices.Equal(applied[c], wantApplied) {
			t.Errorf("applied %s = %v, want %v", c, applied[c], wantApplied)
		}
	}
	if absorbed != 0 || invalid != 0 {
		t.Errorf("target absorbed %d repeats and rejected %d signatures, want 0 and 0", absorbed, invalid)
	}
	if n := s.depth(s.pair.DLQURL); n != 0 {
		t.Errorf("DLQ holds %d messages, want 0", n)
	}
}

func TestPoisonMessageIsDeadLetteredAndItsConversationContinuesOnMoto(t *testing.T) {
	s := newStack(t)
	s.target.failNext("c1-e2", http.StatusBadRequest)
	s.send(s.env("c1-e1", "c1"), "")
	poisonID := s.send(s.env("c1-e2", "c1"), "")
	s.send(s.env("c1-e3", "c1"), "")
	garbageID, err := s.q.Send(context.Background(), s.pair.URL, queue.Message{GroupID: "c2", DeduplicationID: "garbage", Body: []byte("{not json")})
	if err != nil {
		t.Fatal(err)
	}
	s.send(s.env("c2-e1", "c2"), "")
	var logs logtest.Buffer
	s.drain(worker.New(s.workerConfig(&logs, s.forwardRegistry())))

	_, applied, _, _, _ := s.target.snapshot()
	if !slices.Equal(applied["c1"], []string{"c1-e1", "c1-e3"}) || !slices.Equal(applied["c2"], []string{"c2-e1"}) {
		t.Errorf("applied = %v, want c1-e1, c1-e3 and c2-e1 (conversations continue past poison)", applied)
	}
	dlq := s.receive(s.pair.DLQURL)
	if len(dlq.Records) != 2 {
		t.Fatalf("DLQ holds %d messages, want 2", len(dlq.Records))
	}
	want := map[string]struct{ group, reason string }{
		poisonID:  {"c1", "target rejected the event: answered 400 Bad Request"},
		garbageID: {"c2", "invalid envelope"},
	}
	for _, r := range dlq.Records {
		attr := func(k string) string { return aws.ToString(r.MessageAttributes[k].StringValue) }
		w, ok := want[attr(worker.AttrMessageID)]
		if !ok {
			t.Errorf("unexpected dead letter %+v", r.MessageAttributes)
			continue
		}
		// Usually 1; a transient emulator hiccup (a reset connection) may
		// legitimately cost the poison message a retry before its 4xx.
		attempts, _ := strconv.Atoi(attr(worker.AttrAttempts))
		if !strings.Contains(attr(worker.AttrReason), w.reason) || attempts < 1 ||
			attr(worker.AttrGroupID) != w.group || r.Attributes["MessageGroupId"] != w.group || attr(worker.AttrFailedAt) == "" {
			t.Errorf("dead letter %s: reason %q, attempts %q, groupId attr %q, group %s, failedAt %q; want reason %q, ≥ 1 attempt, group %s",
				attr(worker.AttrMessageID), attr(worker.AttrReason), attr(worker.AttrAttempts), attr(worker.AttrGroupID),
				r.Attributes["MessageGroupId"], attr(worker.AttrFailedAt), w.reason, w.group)
		}
	}
	outcomes := outcomes(t, &logs)
	if outcomes[poisonID] != "dead_lettered" || outcomes[garbageID] != "dead_lettered" {
		t.Errorf("outcomes = %v, want both poison messages dead_lettered", outcomes)
	}
	if s.depth(s.pair.URL) != 0 {
		t.Error("source queue not empty: dead-lettered messages were not deleted")
	}
}

func TestRedeliveredAndReenqueuedMessagesOnMoto(t *testing.T) {
	s := newStack(t)
	var logs logtest.Buffer
	h := worker.New(s.workerConfig(&logs, s.forwardRegistry()))
	ctx := context.Background()
	e := s.env("c1-e1", "c1")
	s.send(e, "")

	// The invocation applies the event but the mapping's deletion is lost:
	// SQS redelivers the message when its visibility runs out, after the
	// effect's lease (in AWS the visibility timeout is 6× the function's).
	// The claim was the effect's only write, so the redelivery takes it
	// over and repeats the call with the same Idempotency-Key.
	first := s.receive(s.pair.URL)
	if resp, _ := h.Handle(ctx, first); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("first delivery failed: %v\n%s", failed(resp), logs.String())
	}
	again := s.redeliver(first)
	resp, _ := h.Handle(ctx, again)
	if err := esm.Settle(ctx, s.sqs, s.pair.URL, again, resp); err != nil {
		t.Fatal(err)
	}

	// The same event enqueued anew (new deduplication id), later in the
	// conversation: the earlier message was deleted, so its claim counts as
	// completed and the effect is skipped.
	s.send(reenqueued(e), "again-1")
	s.drain(h)

	posts, applied, keys, absorbed, _ := s.target.snapshot()
	if len(posts["c1"]) != 2 || len(applied["c1"]) != 1 || absorbed != 1 || keys["c1-e1"][0] != keys["c1-e1"][1] {
		t.Errorf("posts = %v, applied %v, absorbed %d; want the redelivery's repeat absorbed by its Idempotency-Key and no third post",
			posts["c1"], applied["c1"], absorbed)
	}
	outs := sequence(t, &logs)
	if !slices.Equal(outs, []string{"processed", "processed", "skipped_duplicate"}) {
		t.Errorf("outcomes = %v, want processed, processed (redelivery), skipped_duplicate (enqueued again)", outs)
	}
}

// blockingPoster holds worker A's delivery until released.
type blockingPoster struct {
	next    *forward.Client
	started chan struct{}
	release chan struct{}
}

func (p *blockingPoster) Post(ctx context.Context, r forward.Request) error {
	p.started <- struct{}{}
	<-p.release
	return p.next.Post(context.WithoutCancel(ctx), r)
}

func TestStaleWorkerIsFencedOffOnMoto(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	outbound := tenant.NewCache(s.creds.Outbound, 0, 0, nil)
	staleApply := make(chan error, 1)
	// Each worker forwards, then records the order's state. Worker A gets
	// stuck inside the delivery; when it wakes it also tries to write state.
	handler := func(name string, p interface {
		Post(context.Context, forward.Request) error
	}) *worker.Registry {
		fwd := worker.Forward(outbound, p)
		reg := worker.NewRegistry()
		reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
			err := fwd(ctx, ev)
			if name == "A" {
				_, aerr := ev.ApplyIfNewer(ctx, "order:o1", 2, []byte("written by stale A"))
				staleApply <- aerr
			}
			if err != nil {
				return err
			}
			_, err = ev.ApplyIfNewer(ctx, "order:o1", 1, []byte("written by "+name))
			return err
		})
		return reg
	}
	stuck := &blockingPoster{next: forward.New(nil, nil), started: make(chan struct{}), release: make(chan struct{})}
	var logsA logtest.Buffer
	workerA := worker.New(s.workerConfig(&logsA, handler("A", stuck)))
	workerB := worker.New(s.workerConfig(nil, handler("B", forward.New(nil, nil))))

	e := s.env("o1-e1", "o1")
	s.send(e, "")
	evA := s.receive(s.pair.URL)
	respA := make(chan events.SQSEventResponse, 1)
	go func() {
		resp, _ := workerA.Handle(ctx, evA)
		respA <- resp
	}()
	<-stuck.started // A claimed the effect and is stuck in the call

	// A's visibility timeout and effect lease (1 minute) run out.
	evB := s.redeliver(evA)
	respB, _ := workerB.Handle(ctx, evB)
	if len(respB.BatchItemFailures) != 0 {
		t.Fatalf("worker B failed: %v", failed(respB))
	}
	if err := esm.Settle(ctx, s.sqs, s.pair.URL, evB, respB); err != nil {
		t.Fatal(err)
	}

	close(stuck.release) // A wakes up, delivers late, and tries to record it
	resp := <-respA
	if got := failed(resp); !slices.Equal(got, []string{evA.Records[0].MessageId}) {
		t.Errorf("worker A's failures = %v, want its message (it lost it)", got)
	}
	if outcomes := outcomes(t, &logsA); outcomes[evA.Records[0].MessageId] != "fenced" {
		t.Errorf("worker A's outcome = %v, want fenced", outcomes)
	}
	if err := <-staleApply; !errors.Is(err, ledger.ErrFenced) {
		t.Errorf("stale worker's state write = %v, want ErrFenced", err)
	}
	ent, err := s.ledger.Entity(ctx, "acme", "order:o1")
	if err != nil || string(ent.Data) != "written by B" || ent.Version != 1 {
		t.Errorf("order state = %+v, %v; want B's write, untouched by A", ent, err)
	}
	rec, err := s.ledger.Record(ctx, ledger.Key{Tenant: "acme", Event: e.Key, Effect: worker.ForwardEffect})
	// B's message succeeded: its claim is the record's last write (SQS
	// deleting the message is what completes it, see ledger.Claim).
	if err != nil || rec.Status != ledger.StatusInProgress || rec.Fence != ent.Fence {
		t.Errorf("ledger record = %+v, %v; want B's claim (fence %s)", rec, err, ent.Fence)
	}
	posts, applied, keys, absorbed, _ := s.target.snapshot()
	if len(posts["o1"]) != 2 || len(applied["o1"]) != 1 || absorbed != 1 || keys["o1-e1"][0] != keys["o1-e1"][1] {
		t.Errorf("target: posts %v, applied %v, absorbed %d, keys %v; want A's late post absorbed by its Idempotency-Key",
			posts["o1"], applied["o1"], absorbed, keys["o1-e1"])
	}
	if n := s.depth(s.pair.URL); n != 0 {
		t.Errorf("%d messages left on the queue, want 0", n)
	}
}

// lossyLedger loses the first n completions: the effect ran, but the write
// recording it never reached DynamoDB.
type lossyLedger struct {
	*ledger.DynamoDB
	lose atomic.Int32
}

func (l *lossyLedger) Complete(ctx context.Context, lease ledger.Lease) error {
	if l.lose.Add(-1) >= 0 {
		return errors.New("complete: connection reset by peer")
	}
	return l.DynamoDB.Complete(ctx, lease)
}

// TestLostCompletionIsAbsorbedDownstreamOnMoto: the message's handler
// fails after its effect ran, so the worker records the effect completed
// (the message will not be deleted) — and that write fails for the whole
// clean-up budget (one failure is retried: TestCompletionWriteIsRetried).
// The retry runs the effect again with the same Idempotency-Key; the target
// absorbs it.
func TestLostCompletionIsAbsorbedDownstreamOnMoto(t *testing.T) {
	s := newStack(t)
	lossy := &lossyLedger{DynamoDB: s.ledger}
	const lost = 3 // writes at 0, 50 and 150 ms fill a 300 ms budget
	lossy.lose.Store(lost)
	s.send(s.env("c1-e1", "c1"), "")
	fwd := s.forwardHandler()
	var calls atomic.Int32
	reg := worker.NewRegistry()
	reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		if err := fwd(ctx, ev); err != nil {
			return err
		}
		if calls.Add(1) == 1 {
			return errors.New("crm update: connection reset") // a later step fails once
		}
		return nil
	})
	cfg := s.workerConfig(nil, reg)
	cfg.Ledger = lossy
	cfg.FinishTimeout = 300 * time.Millisecond
	s.drain(worker.New(cfg))

	posts, applied, keys, absorbed, _ := s.target.snapshot()
	if len(posts["c1"]) != 2 || !slices.Equal(applied["c1"], []string{"c1-e1"}) || absorbed != 1 {
		t.Errorf("target: posts %v, applied %v, absorbed %d; want the repeat absorbed", posts["c1"], applied["c1"], absorbed)
	}
	wantKey := ledger.Key{Tenant: "acme", Event: "acme#hmac#c1-e1", Effect: worker.ForwardEffect}.IdempotencyKey()
	if k := keys["c1-e1"]; len(k) != 2 || k[0] != wantKey || k[1] != wantKey {
		t.Errorf("Idempotency-Keys = %v, want %s twice", k, wantKey)
	}
	if n := lossy.lose.Load(); n != 0 {
		t.Errorf("%d completion writes tried, want %d: the failed message's effect was recorded, retried over the clean-up budget", lost-n, lost)
	}
}

// TestStreamsOnMoto: two destinations of one tenant, each event queued on
// each destination's stream (as the ingest fans it out). Destination a
// fails the conversation's first event twice; b gets all four events in
// the first batch, in order, while a's stream waits, and a then gets them
// in order too, each once.
func TestStreamsOnMoto(t *testing.T) {
	s := newStack(t)
	b := newTarget(t)
	ctx := context.Background()
	out := tenant.Outbound{Destinations: []tenant.Destination{
		{Name: "a", URL: s.target.URL + "/a", Secrets: []string{outboundSecret}},
		{Name: "b", URL: b.URL + "/b", Secrets: []string{outboundSecret}},
	}}
	if err := s.creds.Put(ctx, "acme", tenant.Inbound{}, out, "", nil); err != nil {
		t.Fatal(err)
	}
	s.target.failNext("c1-e1", http.StatusServiceUnavailable, http.StatusServiceUnavailable)
	var msgs []queue.Message
	for i := 1; i <= 4; i++ {
		e := s.env(fmt.Sprintf("c1-e%d", i), "c1")
		body, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		m := queue.Message{GroupID: webhook.GroupID(e.Conversation, e.Key), DeduplicationID: webhook.DeduplicationID(e.Key), Body: body,
			Attributes: queue.EnvelopeIdentity(e).Attributes()}
		msgs = append(msgs, m.ForStream(queue.Stream{Destination: "a"}), m.ForStream(queue.Stream{Destination: "b"}))
	}
	for i, err := range s.q.SendBatch(ctx, s.pair.URL, msgs) {
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	reg := worker.NewRegistry()
	reg.HandleForward(s.forwardHandler())
	h := worker.New(s.workerConfig(nil, reg))

	first := s.receive(s.pair.URL)
	resp, err := h.Handle(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if err := esm.Settle(ctx, s.sqs, s.pair.URL, first, resp); err != nil {
		t.Fatal(err)
	}
	if _, applied, _, _, _ := b.snapshot(); !slices.Equal(applied["c1"], []string{"c1-e1", "c1-e2", "c1-e3", "c1-e4"}) {
		t.Errorf("b after the first batch of %d messages applied %v, want all four while a fails", len(first.Records), applied["c1"])
	}
	if _, applied, _, _, _ := s.target.snapshot(); len(applied["c1"]) != 0 {
		t.Errorf("a applied %v in the first batch, want nothing (its first event failed)", applied["c1"])
	}
	s.drain(h)
	posts, applied, _, _, invalid := s.target.snapshot()
	if !slices.Equal(applied["c1"], []string{"c1-e1", "c1-e2", "c1-e3", "c1-e4"}) || invalid != 0 {
		t.Errorf("a applied %v (posts %v, %d invalid), want all four in order", applied["c1"], posts["c1"], invalid)
	}
	if bposts, _, _, _, _ := b.snapshot(); len(bposts["c1"]) != 4 {
		t.Errorf("b got %v, want each event once", bposts["c1"])
	}
}
