package worker_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/worker"
)

// streamRec is the record of e's message of stream s (as the ingest
// queues it: queue.Message.ForStream), its receiveCount-th delivery.
func streamRec(t testing.TB, e *envelope.Envelope, s queue.Stream, receiveCount int) events.SQSMessage {
	t.Helper()
	id := "m-" + e.EventID + "-" + strings.NewReplacer(",", "-", ":", "-").Replace(s.String())
	r := recAs(t, id, e, receiveCount)
	m := queue.Message{GroupID: e.Conversation, Attributes: queue.EnvelopeIdentity(e).Attributes()}.ForStream(s)
	r.Attributes["MessageGroupId"] = m.GroupID
	r.MessageAttributes = map[string]events.SQSMessageAttribute{}
	for k, v := range m.Attributes {
		r.MessageAttributes[k] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(v)}
	}
	return r
}

const twoDestinations = `{"destinations": [
	{"name": "down", "url": "https://down.example/hooks", "secrets": ["whsec_c2VjcmV0"]},
	{"name": "up", "url": "https://up.example/hooks", "secrets": ["whsec_c2VjcmV0"]}
]}`

// A destination that fails or answers 429 holds only its own stream: the
// other destination's messages of the same conversation, in the same
// batch, are delivered at once and in order; the failing stream keeps its
// order and delivers later, each event once, under the Idempotency-Key
// of a destination's effect.
func TestStreamsIndependent(t *testing.T) {
	for _, fault := range []struct {
		name string
		err  error
	}{
		{"fails", errors.New("503 unavailable")},
		{"answers 429", forward.Classify(http.StatusTooManyRequests, http.Header{"Retry-After": {"30"}}, nil, time.Now())},
	} {
		t.Run(fault.name, func(t *testing.T) {
			f := newFixture(t, nil)
			p := &destPoster{now: f.clock.Now, errs: map[string]error{"down": fault.err}}
			f.reg.HandleForward(worker.Forward(fakeOutbound{out: outboundOf(t, twoDestinations)}, p))
			e1, e2 := env("s1", "c1"), env("s2", "c1")
			down, up := queue.Stream{Destination: "down"}, queue.Stream{Destination: "up"}
			var b events.SQSEvent
			for _, e := range []*envelope.Envelope{e1, e2} {
				b.Records = append(b.Records, streamRec(t, e, queue.Stream{Effects: true}, 1), streamRec(t, e, down, 1), streamRec(t, e, up, 1))
			}
			resp, _ := f.h.Handle(context.Background(), b)
			if got := p.to("up"); !slices.Equal(got, []string{"s1", "s2"}) {
				t.Errorf("up got %v, want [s1 s2] while down %s", got, fault.name)
			}
			if got := failed(resp); !slices.Equal(got, []string{"m-s1-forward-down", "m-s2-forward-down"}) {
				t.Errorf("failures %v, want only down's messages (the second blocked)", got)
			}
			out := outcomes(t, f.logs)
			if out["m-s1-effects"] != "filtered" || out["m-s1-forward-up"] != "processed" || out["m-s2-forward-up"] != "processed" {
				t.Errorf("outcomes %v", out)
			}
			// The destination recovers: its stream delivers in order, once.
			p.errs = nil
			f.clock.Advance(time.Hour)
			b = events.SQSEvent{Records: []events.SQSMessage{streamRec(t, e1, down, 2), streamRec(t, e2, down, 2)}}
			if resp, _ := f.h.Handle(context.Background(), b); len(resp.BatchItemFailures) != 0 {
				t.Fatalf("failures %v after recovery\n%s", failed(resp), f.logs)
			}
			if got := p.to("down"); !slices.Equal(got, []string{"s1", "s1", "s2"}) {
				t.Errorf("down got %v, want s1 (refused), then s1 and s2 in order", got)
			}
			if got := p.to("up"); len(got) != 2 {
				t.Errorf("up got %v after recovery, want nothing more", got)
			}
			for _, x := range p.posts {
				if want := (ledger.Key{Tenant: "acme", Event: "acme#stripe#" + x.event, Effect: worker.DestinationEffect(x.dest)}).IdempotencyKey(); x.key != want {
					t.Errorf("%s/%s Idempotency-Key %s, want the destination effect's %s", x.dest, x.event, x.key, want)
				}
			}
		})
	}
}

// A 429, with or without Retry-After, and a Retry-After on a 503 are
// waits: outcome paced, no attempt counted (no FailedAttempt), the
// visibility the wait asked for or a backoff; nothing is dead-lettered
// however often it comes back within its horizon.
func TestWaitingIsNotAnAttempt(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		wantVis int32
	}{
		{"429 with Retry-After", forward.Classify(429, http.Header{"Retry-After": {"30"}}, nil, time.Now()), 30},
		{"429 without", forward.Classify(429, nil, nil, time.Now()), 2}, // the backoff of its first receive
		{"503 with Retry-After", forward.Classify(503, http.Header{"Retry-After": {"60"}}, nil, time.Now()), 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *worker.Config) { c.MaxAttempts = 3; c.QueueRetention = 14 * 24 * time.Hour })
			p := &destPoster{now: f.clock.Now, errs: map[string]error{"down": tt.err}}
			f.reg.HandleForward(worker.Forward(fakeOutbound{out: outboundOf(t, twoDestinations)}, p))
			e := env("w1", "c1")
			for receive := 1; receive <= 8; receive++ {
				r := streamRec(t, e, queue.Stream{Destination: "down"}, receive)
				r.Attributes["SentTimestamp"] = strconv.FormatInt(f.clock.Now().Add(-time.Duration(receive)*time.Minute).UnixMilli(), 10)
				resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
				if len(resp.BatchItemFailures) != 1 {
					t.Fatalf("receive %d: failures %v, want it to wait\n%s", receive, failed(resp), f.logs)
				}
				if receive == 1 {
					if v := f.sqs.visibility[r.ReceiptHandle]; v < tt.wantVis {
						t.Errorf("visibility %d s, want at least %d", v, tt.wantVis)
					}
				}
			}
			for _, l := range f.logs.Lines(t) {
				if l["msg"] == "message" && (l["outcome"] != "paced" || l["attempt"] != nil || l["stream"] != "forward:down") {
					t.Errorf("line %v: want outcome paced, no attempt, stream forward:down", l)
				}
			}
			if n, err := f.ledger.Attempts(context.Background(), "m-w1-forward-down"); err != nil || n != 0 {
				t.Errorf("Attempts = %d, %v; want none counted", n, err)
			}
			if len(f.sqs.sent) != 0 {
				t.Errorf("dead letters %v: waiting within the horizon never dead-letters", f.sqs.sent)
			}
		})
	}
}

// The retry horizon: a message whose next wait or retry would fall past
// its destination's horizon is dead-lettered with ErrHorizon, and the
// dead letter names its stream (hookpack.stream).
func TestHorizonDeadLetters(t *testing.T) {
	const short = `{"destinations": [
		{"name": "down", "url": "https://down.example/hooks", "secrets": ["whsec_c2VjcmV0"], "horizon": "10m"},
		{"name": "up", "url": "https://up.example/hooks", "secrets": ["whsec_c2VjcmV0"]}
	]}`
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"waiting", forward.Classify(429, http.Header{"Retry-After": {"120"}}, nil, time.Now())},
		{"failing", errors.New("503")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *worker.Config) {
				c.QueueRetention = 14 * 24 * time.Hour
				c.Retry = worker.Retry{Base: 4 * time.Minute, Jitter: fixedJitter(0)}
			})
			p := &destPoster{now: f.clock.Now, errs: map[string]error{"down": tt.err}}
			f.reg.HandleForward(worker.Forward(fakeOutbound{out: outboundOf(t, short)}, p))
			e := env("h1", "c1")
			r := streamRec(t, e, queue.Stream{Destination: "down"}, 3)
			r.Attributes["SentTimestamp"] = strconv.FormatInt(f.clock.Now().Add(-9*time.Minute).UnixMilli(), 10)
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
			if len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 1 {
				t.Fatalf("failures %v, dead letters %d: want it dead-lettered at the horizon\n%s", failed(resp), len(f.sqs.sent), f.logs)
			}
			dl := f.sqs.sent[0].msg
			if reason := dl.Attributes[worker.AttrReason]; !strings.Contains(reason, worker.ErrHorizon.Error()) || !strings.Contains(reason, "destination down") {
				t.Errorf("reason %q, want the horizon of destination down", reason)
			}
			if s := dl.Attributes[queue.AttrStream]; s != "forward:down" {
				t.Errorf("dead letter's %s = %q, want forward:down", queue.AttrStream, s)
			}
		})
	}
}

// A stream of custom effects only, whose event resolves to the built-in
// forward, is done without a ledger write; a custom handler runs on it,
// never on a destination's stream; a destination the configuration no
// longer holds is retried with ErrNoDestination, not delivered elsewhere.
func TestStreamHandlers(t *testing.T) {
	f := newFixture(t, nil)
	p := &destPoster{now: f.clock.Now}
	f.reg.HandleForward(worker.Forward(fakeOutbound{out: outboundOf(t, twoDestinations)}, p))
	var custom []string
	f.reg.Handle("stripe", "customer.created", func(ctx context.Context, ev *worker.Event) error {
		return ev.Once(ctx, "crm", func(context.Context, string) error { custom = append(custom, ev.EventID); return nil })
	})
	plain, crm := env("x1", "c1"), env("x2", "c2")
	crm.Type = "customer.created"
	b := events.SQSEvent{Records: []events.SQSMessage{
		streamRec(t, plain, queue.Stream{Effects: true}, 1),
		streamRec(t, crm, queue.Stream{Effects: true}, 1),
		streamRec(t, crm, queue.Stream{Destination: "up"}, 1),
		streamRec(t, plain, queue.Stream{Destination: "gone"}, 1),
	}}
	resp, _ := f.h.Handle(context.Background(), b)
	if got := failed(resp); !slices.Equal(got, []string{"m-x1-forward-gone"}) {
		t.Errorf("failures %v, want the removed destination's message", got)
	}
	if !slices.Equal(custom, []string{"x2"}) || !slices.Equal(p.to("up"), []string{"x2"}) || len(p.posts) != 1 {
		t.Errorf("custom effects %v, posts %v: want x2's effect once and its forward to up", custom, p.posts)
	}
	if recs, err := f.ledger.Effects(context.Background(), "acme", plain.Key); err != nil || len(recs) != 1 || recs[0].Key.Effect != worker.DestinationEffect("gone") {
		t.Errorf("records of an event without custom effects: %+v, %v; want only the removed stream's claim", recs, err)
	}
	var reason string
	for _, l := range f.logs.Lines(t) {
		if l["messageId"] == "m-x1-forward-gone" {
			reason, _ = l["error"].(string)
		}
	}
	if !strings.Contains(reason, worker.ErrNoDestination.Error()) {
		t.Errorf("removed destination's error %q, want ErrNoDestination", reason)
	}
}

// The one stream of a tenant with a single destination (on the
// conversation's group, with its custom effects) costs what a targetUrl
// does: one ledger record, its delivery's, which is the event's.
func TestOneStreamOneRecord(t *testing.T) {
	f := newFixture(t, nil)
	p := &destPoster{now: f.clock.Now}
	one := `{"destinations": [{"name": "only", "url": "https://only.example/hooks", "secrets": ["whsec_c2VjcmV0"]}]}`
	f.reg.HandleForward(worker.Forward(fakeOutbound{out: outboundOf(t, one)}, p))
	e := env("o1", "c1")
	r := streamRec(t, e, queue.Stream{Destination: "only", Effects: true}, 1)
	if r.Attributes["MessageGroupId"] != "c1" {
		t.Fatalf("group %s, want the conversation's", r.Attributes["MessageGroupId"])
	}
	if resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v\n%s", failed(resp), f.logs)
	}
	recs, err := f.ledger.Effects(context.Background(), "acme", e.Key)
	if err != nil || len(recs) != 1 || recs[0].Key.Effect != worker.DestinationEffect("only") || !slices.Equal(p.to("only"), []string{"o1"}) {
		t.Errorf("records %+v, %v, posts %v: want one record, forward:only, and one post", recs, err, p.posts)
	}
}
