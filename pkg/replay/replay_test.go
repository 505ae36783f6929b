package replay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/webhook"
	"github.com/hookpack/hookpack/pkg/worker"
)

type fixture struct {
	t      *testing.T
	client *sqs.Client
	q      *queue.SQS
	pair   provision.Pair
	r      *replay.Replayer
}

// newFixture's replayer long-polls like the tools do (Wait 1 s): moto
// makes a message released with ChangeMessageVisibility(0) visible only
// after the millisecond of the release, so a receive without a wait in the
// same millisecond finds the queue empty (CI failed on it once).
func newFixture(t *testing.T) *fixture {
	client := sqs.NewFromConfig(awstest.Config(t, awstest.Moto(t)))
	pair, err := provision.QueuePair(context.Background(), client, awstest.Name(t), provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	q := queue.NewSQS(client)
	return &fixture{t: t, client: client, q: q, pair: pair, r: replay.New(client, q, replay.Options{Wait: time.Second})}
}

func envelopeOf(id, conv, typ string) *envelope.Envelope {
	e := &envelope.Envelope{
		Version: envelope.Version, Key: "acme#hmac#" + id, Tenant: "acme", Provider: "hmac", EventID: id,
		Type: typ, Conversation: conv, ReceivedAt: time.Now().UTC(),
	}
	e.SetBody([]byte(`{"id":"` + id + `"}`))
	return e
}

// deadLetter puts a message on the DLQ the way the worker does.
func (f *fixture) deadLetter(group, origID string, body []byte) {
	f.t.Helper()
	_, err := f.q.Send(context.Background(), f.pair.DLQURL, queue.Message{
		GroupID: group, DeduplicationID: webhook.DeduplicationID("dlq#" + origID), Body: body,
		Attributes: map[string]string{
			worker.AttrReason: "target rejected the event: answered 400 Bad Request", worker.AttrAttempts: "3",
			worker.AttrGroupID: group, worker.AttrMessageID: origID, worker.AttrFailedAt: "2026-11-22T12:00:00Z",
		},
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) deadLetterEvent(id, conv, typ string) {
	f.t.Helper()
	b, err := envelopeOf(id, conv, typ).Encode()
	if err != nil {
		f.t.Fatal(err)
	}
	f.deadLetter(conv, "orig-"+id, b)
}

// sourceEvents receives everything on the source queue: event ids per group
// in delivery order.
func (f *fixture) sourceEvents() map[string][]string {
	f.t.Helper()
	out := map[string][]string{}
	for {
		ev, err := esm.Receive(context.Background(), f.client, f.pair.URL, esm.ReceiveOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		if len(ev.Records) == 0 {
			return out
		}
		for _, r := range ev.Records {
			id := "invalid"
			if e, err := envelope.Decode([]byte(r.Body)); err == nil {
				id = e.EventID
			}
			out[r.Attributes["MessageGroupId"]] = append(out[r.Attributes["MessageGroupId"]], id)
		}
		if err := esm.Settle(context.Background(), f.client, f.pair.URL, ev, events.SQSEventResponse{}); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) dlqDepth() int {
	f.t.Helper()
	out, err := f.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(f.pair.DLQURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	var v, nv int
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessages"], &v)
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessagesNotVisible"], &nv)
	return v + nv
}

func statuses(items []replay.Item) map[string]string {
	out := map[string]string{}
	for _, it := range items {
		k := it.EventKey
		if k == "" {
			k = "garbage"
		}
		out[strings.TrimPrefix(k, "acme#hmac#")] = it.Status
	}
	return out
}

func TestListAndRedriveOnMoto(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.deadLetterEvent("a1", "A", "order.updated")
	f.deadLetterEvent("a2", "A", "order.refunded")
	f.deadLetterEvent("a3", "A", "order.updated")
	f.deadLetterEvent("b1", "B", "customer.updated")
	f.deadLetter("C", "orig-garbage", []byte("{not json"))

	items, err := f.r.List(ctx, f.pair.DLQURL, replay.Filter{})
	if err != nil {
		t.Fatalf("List() = %v", err)
	}
	if len(items) != 5 {
		t.Fatalf("List() = %d items, want 5", len(items))
	}
	for _, it := range items {
		if it.Reason != "target rejected the event: answered 400 Bad Request" || it.Attempts != "3" ||
			!strings.HasPrefix(it.OriginalMessageID, "orig-") || it.Status != replay.StatusListed || it.SentAt.IsZero() {
			t.Errorf("List() item = %+v", it)
		}
	}
	if a, err := f.r.List(ctx, f.pair.DLQURL, replay.Filter{Conversation: "A"}); err != nil || len(a) != 3 {
		t.Errorf("List(conversation A) = %d items, %v; want 3", len(a), err)
	}
	if n := f.dlqDepth(); n != 5 {
		t.Fatalf("after List the DLQ holds %d messages, want all 5 back", n)
	}

	items, err = f.r.Redrive(ctx, f.pair.DLQURL, f.pair.URL, replay.Filter{}, true)
	if err != nil {
		t.Fatalf("Redrive(dry run) = %v", err)
	}
	for k, s := range statuses(items) {
		if s != replay.StatusWouldMove {
			t.Errorf("dry run: %s is %s, want %s", k, s, replay.StatusWouldMove)
		}
	}
	if f.dlqDepth() != 5 || len(f.sourceEvents()) != 0 {
		t.Fatal("a dry run moved messages")
	}

	// Only order.updated: a1 moves; a2 does not match, and a3 must not
	// overtake it.
	items, err = f.r.Redrive(ctx, f.pair.DLQURL, f.pair.URL, replay.Filter{Type: "order.updated"}, false)
	if err != nil {
		t.Fatalf("Redrive(type) = %v", err)
	}
	want := map[string]string{"a1": replay.StatusMoved, "a2": replay.StatusHeld, "a3": replay.StatusHeld, "b1": replay.StatusHeld, "garbage": replay.StatusHeld}
	if got := statuses(items); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Redrive(type order.updated) = %v, want %v", got, want)
	}
	if got := f.sourceEvents(); !slices.Equal(got["A"], []string{"a1"}) || len(got) != 1 {
		t.Errorf("source queue after the filtered redrive = %v, want only A: a1", got)
	}

	// Everything else, in DLQ order per conversation.
	if _, err := f.r.Redrive(ctx, f.pair.DLQURL, f.pair.URL, replay.Filter{}, false); err != nil {
		t.Fatalf("Redrive() = %v", err)
	}
	got := f.sourceEvents()
	if !slices.Equal(got["A"], []string{"a2", "a3"}) || !slices.Equal(got["B"], []string{"b1"}) || !slices.Equal(got["C"], []string{"invalid"}) {
		t.Errorf("source queue = %v, want A: a2 a3, B: b1, C: the invalid message", got)
	}
	if n := f.dlqDepth(); n != 0 {
		t.Errorf("DLQ holds %d messages after the redrive, want 0", n)
	}
}

// lossyReceives is an HTTP client that loses the answer of the first n
// ReceiveMessage calls after SQS handled them, as a dropped connection
// does (the SDK retries the call).
type lossyReceives struct {
	n    int
	lost int
}

func (c *lossyReceives) Do(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil || req.Header.Get("X-Amz-Target") != "AmazonSQS.ReceiveMessage" || c.lost >= c.n {
		return resp, err
	}
	c.lost++
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errors.New("read tcp: use of closed network connection")
}

// TestListAfterALostReceiveAnswerOnMoto: a receive whose answer is lost
// hides its messages for the run's visibility timeout; the SDK's retry of
// it, under the same ReceiveRequestAttemptId, gets them back, so the run
// still lists (and a redrive still moves) every dead letter. Without the
// attempt id the retry finds them hidden and the run lists none.
func TestListAfterALostReceiveAnswerOnMoto(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.deadLetterEvent("a1", "A", "order.updated")
	f.deadLetterEvent("b1", "B", "customer.updated")
	lossy := &lossyReceives{n: 1}
	client := sqs.NewFromConfig(awstest.Config(t, awstest.Moto(t)), func(o *sqs.Options) { o.HTTPClient = lossy })
	r := replay.New(client, f.q, replay.Options{Wait: time.Second})
	items, err := r.List(ctx, f.pair.DLQURL, replay.Filter{})
	if lossy.lost != 1 {
		t.Fatalf("%d receive answers lost, want 1", lossy.lost)
	}
	if err != nil || len(items) != 2 {
		t.Fatalf("List() after a lost receive answer = %d items, %v; want both dead letters", len(items), err)
	}
	lossy.n = 2
	items, err = r.Redrive(ctx, f.pair.DLQURL, f.pair.URL, replay.Filter{}, false)
	if err != nil || fmt.Sprint(statuses(items)) != fmt.Sprint(map[string]string{"a1": replay.StatusMoved, "b1": replay.StatusMoved}) {
		t.Fatalf("Redrive() after a lost receive answer = %v, %v; want a1 and b1 moved", statuses(items), err)
	}
	if n := f.dlqDepth(); n != 0 {
		t.Errorf("DLQ holds %d messages after the redrive, want 0", n)
	}
}

// End to end: the worker dead-letters an event after one of its two effects
// completed; after the fix, the replayed event runs only the missing one.
func TestReplayedEventDoesNotRepeatCompletedEffectsOnMoto(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	runs := map[string]int{}
	broken := true
	reg := worker.NewRegistry()
	reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
		for _, effect := range []string{"charge", "email"} {
			err := ev.Once(ctx, effect, func(context.Context, string) error {
				if effect == "email" && broken {
					return worker.Permanent(errors.New("mail template missing"))
				}
				runs[effect]++
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	h := worker.New(worker.Config{
		Ledger: ledger.NewMemory(ledger.Options{}), Handlers: reg, DLQ: f.q, Visibility: f.client,
		QueueURLTemplate: f.pair.URL, Retry: worker.Retry{Base: -1},
	})
	drain := func() {
		for range 20 {
			ev, err := esm.Receive(ctx, f.client, f.pair.URL, esm.ReceiveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ev.Records) == 0 {
				return
			}
			resp, _ := h.Handle(ctx, ev)
			if err := esm.Settle(ctx, f.client, f.pair.URL, ev, resp); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatal("queue not drained")
	}
	e := envelopeOf("e1", "A", "order.paid")
	b, _ := e.Encode()
	if _, err := f.q.Send(ctx, f.pair.URL, queue.Message{GroupID: "A", DeduplicationID: webhook.DeduplicationID(e.Key), Body: b}); err != nil {
		t.Fatal(err)
	}
	drain()
	if f.dlqDepth() != 1 || runs["charge"] != 1 || runs["email"] != 0 {
		t.Fatalf("after the failure: DLQ %d, runs %v; want the event dead-lettered after charging once", f.dlqDepth(), runs)
	}

	broken = false
	items, err := f.r.Redrive(ctx, f.pair.DLQURL, f.pair.URL, replay.Filter{}, false)
	if err != nil || len(items) != 1 || items[0].Status != replay.StatusMoved || !strings.Contains(items[0].Reason, "mail template missing") {
		t.Fatalf("Redrive() = %+v, %v", items, err)
	}
	drain()
	if runs["charge"] != 1 || runs["email"] != 1 {
		t.Errorf("runs after the replay = %v, want charge once (skipped on replay) and email once", runs)
	}
	// Replaying it again is a no-op.
	if _, err := f.q.Send(ctx, f.pair.URL, queue.Message{GroupID: "A", DeduplicationID: "replay-again", Body: b}); err != nil {
		t.Fatal(err)
	}
	drain()
	if runs["charge"] != 1 || runs["email"] != 1 || f.dlqDepth() != 0 {
		t.Errorf("runs after a second replay = %v (DLQ %d), want no change", runs, f.dlqDepth())
	}
}

// A dead letter whose body ingest put in the payload bucket is listed with
// its type and conversation, filtered on them, and redriven as the same
// pointer (with the Extended Client's size attribute) that the worker reads.
func TestPointerDeadLetterOnMoto(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	cfg := awstest.Config(t, awstest.Moto(t))
	bucket := provision.BucketName(awstest.Name(t))
	if err := provision.Bucket(ctx, queue.NewS3(cfg), bucket); err != nil {
		t.Fatal(err)
	}
	payloads := queue.NewPayloads(queue.NewS3(cfg), bucket)
	e := envelopeOf("big1", "A", "order.updated")
	e.SetBody([]byte(`{"pad":"` + strings.Repeat("x", 1_100_000) + `"}`))
	body, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	q := queue.NewSQS(f.client)
	q.Offload = payloads
	attrs := queue.EnvelopeIdentity(e).Attributes()
	attrs[worker.AttrReason], attrs[worker.AttrGroupID] = "answered 400", "A"
	m := queue.Message{GroupID: "A", DeduplicationID: "dlq-big1", Body: body, Attributes: attrs}
	if errs := q.SendBatch(ctx, f.pair.DLQURL, []queue.Message{m}); errs[0] != nil {
		t.Fatal(errs[0])
	}

	// The fixture's replayer reads no payload bucket.
	if items, err := f.r.List(ctx, f.pair.DLQURL, replay.Filter{}); err != nil || len(items) != 1 || items[0].Type != "" || !strings.Contains(items[0].Note, "payload bucket") {
		t.Fatalf("List() without the bucket = %+v, %v; want the item with a note that its body is in the bucket", items, err)
	}
	r := replay.New(f.client, queue.NewSQS(f.client), replay.Options{Wait: time.Second, Payloads: payloads})
	items, err := r.Redrive(ctx, f.pair.DLQURL, f.pair.URL, replay.Filter{Type: "order.updated", Conversation: "A"}, false)
	if err != nil || len(items) != 1 || items[0].Status != replay.StatusMoved || items[0].EventKey != e.Key {
		t.Fatalf("Redrive(type, conversation) = %+v, %v; want the pointer message moved", items, err)
	}
	ev, err := esm.Receive(ctx, f.client, f.pair.URL, esm.ReceiveOptions{})
	if err != nil || len(ev.Records) != 1 {
		t.Fatalf("source queue = %+v, %v", ev.Records, err)
	}
	rec := ev.Records[0]
	if _, ok := rec.MessageAttributes[queue.SizeAttribute]; !ok || rec.MessageAttributes[replay.AttrReplayOf].StringValue == nil {
		t.Fatalf("redriven attributes = %v, want the size attribute and the replay mark", rec.MessageAttributes)
	}
	if id, ok := queue.IdentityOf(rec.MessageAttributes); !ok || id != queue.EnvelopeIdentity(e) {
		t.Errorf("redriven identity = %+v, %v; want the event's (%+v): a worker that cannot read the body still names it", id, ok, queue.EnvelopeIdentity(e))
	}
	got, err := payloads.Get(ctx, rec.Body)
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("the redriven pointer reads %d bytes, %v; want the envelope", len(got), err)
	}
}

// redeadLetter is a source queue behind which the worker refuses every
// event at once: each send puts a new copy on the DLQ (a new message id),
// as make run did 3,612 times in 199 s before a redrive held such copies.
type redeadLetter struct {
	f     *fixture
	sends int
}

func (s *redeadLetter) Send(ctx context.Context, url string, m queue.Message) (string, error) {
	id, err := s.f.q.Send(ctx, url, m)
	if err != nil {
		return "", err
	}
	s.sends++
	e, err := envelope.Decode(m.Body)
	if err != nil {
		return "", err
	}
	_, err = s.f.q.Send(ctx, s.f.pair.DLQURL, queue.Message{
		GroupID: m.GroupID, DeduplicationID: webhook.DeduplicationID("dlq#" + id), Body: m.Body,
		Attributes: map[string]string{worker.AttrReason: "target rejected the event again", worker.AttrGroupID: m.GroupID,
			worker.AttrMessageID: id, worker.AttrEventKey: e.Key},
	})
	return id, err
}

func TestRedriveEndsWhenTheCopyIsDeadLetteredAgainOnMoto(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.deadLetterEvent("a1", "A", "order.updated")
	f.deadLetterEvent("a2", "A", "order.updated")
	f.deadLetterEvent("b1", "B", "order.updated")
	time.Sleep(time.Millisecond) // SentTimestamp is in milliseconds
	src := &redeadLetter{f: f}
	done := make(chan struct{})
	var items []replay.Item
	var err error
	go func() {
		defer close(done)
		items, err = replay.New(f.client, src, replay.Options{Wait: time.Second}).Redrive(ctx, f.pair.DLQURL, f.pair.URL, replay.Filter{}, false)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("the redrive did not end within a minute (%d sends)", src.sends)
	}
	if err != nil {
		t.Fatalf("Redrive() = %v", err)
	}
	moved, held := 0, 0
	for _, it := range items {
		switch {
		case it.Status == replay.StatusMoved:
			moved++
		case it.Status == replay.StatusHeld && strings.HasPrefix(it.Note, replay.NoteAfterStart):
			held++
		default:
			t.Errorf("item %+v, want moved, or held as dead-lettered after the start", it)
		}
	}
	if src.sends != 3 || moved != 3 || held < 1 {
		t.Errorf("%d sends, %d moved, %d held; want the 3 events moved once each and the copies held", src.sends, moved, held)
	}
	if n := f.dlqDepth(); n != 3 {
		t.Errorf("the DLQ holds %d messages after the run, want the 3 copies", n)
	}
}

// On moto, a destination's redrive moves its own stream's dead letters
// back on their stream's group with their hookpack.stream (so the worker
// delivers them to that destination alone), and leaves the other
// destination's, the custom effects' and the one without a stream.
func TestRedriveByDestinationOnMoto(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i, m := range []struct{ id, group, stream string }{
		{"e1", "A|billing", "forward:billing"}, {"e1", "A|ci", "forward:ci"}, {"e1", "A", "effects"}, {"e2", "B", ""}, {"e3", "A|billing", "forward:billing"},
	} {
		b, err := envelopeOf(m.id, "A", "order.updated").Encode()
		if err != nil {
			t.Fatal(err)
		}
		attrs := map[string]string{worker.AttrReason: "answered 400", worker.AttrGroupID: m.group, worker.AttrMessageID: fmt.Sprint("orig-", i)}
		if m.stream != "" {
			attrs[queue.AttrStream] = m.stream
		}
		if _, err := f.q.Send(ctx, f.pair.DLQURL, queue.Message{GroupID: m.group, DeduplicationID: fmt.Sprint("dlq-", i), Body: b, Attributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Millisecond) // SentTimestamp is in milliseconds
	items, err := f.r.Redrive(ctx, f.pair.DLQURL, f.pair.URL, replay.Filter{Destination: "billing"}, false)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for _, it := range items {
		if it.Status == replay.StatusMoved {
			moved++
			if it.Destination != "billing" {
				t.Errorf("moved %s of stream %q", it.MessageID, it.Stream)
			}
		}
	}
	if moved != 2 || f.dlqDepth() != 3 {
		t.Errorf("Redrive(billing) moved %d, left %d in the DLQ; want 2 moved, 3 left", moved, f.dlqDepth())
	}
	ev, err := esm.Receive(ctx, f.client, f.pair.URL, esm.ReceiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range ev.Records {
		s, _ := queue.StreamOf(r.MessageAttributes)
		e, _ := envelope.Decode([]byte(r.Body))
		got = append(got, r.Attributes["MessageGroupId"]+" "+s.String()+" "+e.EventID)
	}
	if want := []string{"A|billing forward:billing e1", "A|billing forward:billing e3"}; !slices.Equal(got, want) {
		t.Errorf("the source queue holds %q, want %q", got, want)
	}
}
