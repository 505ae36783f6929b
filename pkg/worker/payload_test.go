package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/worker"
)

// fakePayloads serves offloaded bodies by pointer body, or fails with err.
type fakePayloads struct {
	bodies map[string][]byte
	err    error
}

func (p *fakePayloads) Get(_ context.Context, pointer string) ([]byte, error) {
	if p.err != nil {
		return nil, p.err
	}
	b, ok := p.bodies[pointer]
	if !ok {
		return nil, fmt.Errorf("%w: %s", queue.ErrPayloadGone, pointer)
	}
	return b, nil
}

// A message whose body ingest offloaded to S3 (queue.SizeAttribute marks
// it) reaches its handler as the envelope it points to; a pointer that
// cannot be resolved is dead-lettered with the reason and the pointer
// (attribute included, so Extended Client readers of the DLQ resolve it
// too), or retried when the read failed transiently.
func TestPointerMessages(t *testing.T) {
	const pointer = `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"hp-acme.fifo/d1"}]`
	e := env("big", "A")
	full, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		payloads    *fakePayloads // nil: no payload bucket configured
		wantHandled bool
		wantDLQ     string // reason, when dead-lettered
		wantRetried bool
	}{
		{"resolved", &fakePayloads{bodies: map[string][]byte{pointer: full}}, true, "", false},
		{"object expired", &fakePayloads{}, false, "offloaded payload not found", false},
		{"no payload bucket configured", nil, false, "invalid payload pointer", false},
		{"S3 unavailable: retried", &fakePayloads{err: errors.New("s3: SlowDown")}, false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *worker.Config) {
				if tt.payloads != nil {
					c.Payloads = tt.payloads
				}
			})
			var got string
			f.reg.Handle("stripe", worker.Any, func(_ context.Context, ev *worker.Event) error {
				got = ev.Body
				return nil
			})
			r := rec(t, e, 1)
			r.Body = pointer
			r.MessageAttributes = map[string]events.SQSMessageAttribute{queue.SizeAttribute: {DataType: "Number", StringValue: ptr(fmt.Sprint(len(full)))}}
			if tt.wantDLQ != "" {
				// A destination's stream message: its dead letter keeps
				// the stream though no attribute names its event.
				r.MessageAttributes[queue.AttrStream] = events.SQSMessageAttribute{DataType: "String", StringValue: ptr("forward:billing")}
			}
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
			if handled := got == e.Body; handled != tt.wantHandled {
				t.Errorf("handler saw body %.40q, want handled %v", got, tt.wantHandled)
			}
			if retried := len(resp.BatchItemFailures) == 1; retried != tt.wantRetried {
				t.Errorf("failures = %v, want retried %v", failed(resp), tt.wantRetried)
			}
			if tt.wantDLQ == "" {
				if len(f.sqs.sent) != 0 {
					t.Errorf("dead-lettered %v", f.sqs.sent)
				}
				return
			}
			if len(f.sqs.sent) != 1 {
				t.Fatalf("%d dead letters, want 1", len(f.sqs.sent))
			}
			m := f.sqs.sent[0].msg
			if string(m.Body) != pointer || m.Attributes[queue.SizeAttribute] != fmt.Sprint(len(full)) || !strings.Contains(m.Attributes[worker.AttrReason], tt.wantDLQ) {
				t.Errorf("dead letter = %s %v, want the pointer with its size attribute and reason %q", m.Body, m.Attributes, tt.wantDLQ)
			}
			if m.Attributes[queue.AttrStream] != "forward:billing" {
				t.Errorf("dead letter's %s = %q, want the message's forward:billing", queue.AttrStream, m.Attributes[queue.AttrStream])
			}
		})
	}
}

func ptr(s string) *string { return &s }

// sqsAttributes are attrs as Lambda delivers them.
func sqsAttributes(attrs map[string]string) map[string]events.SQSMessageAttribute {
	out := map[string]events.SQSMessageAttribute{}
	for k, v := range attrs {
		out[k] = events.SQSMessageAttribute{DataType: "String", StringValue: ptr(v)}
	}
	return out
}

// An offloaded body that cannot be read is given up under the event its
// attributes name: once the object is readable again, a redelivered copy
// finds its event dead-lettered and runs nothing. The dead letter's body,
// re-sent by hand without any attribute, is still a pointer and that event's
// replay.
func TestUnreadableBodyIsBuriedByItsIdentity(t *testing.T) {
	const pointer = `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"hp-acme.fifo/d2"}]`
	e := env("denied", "A")
	full, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	payloads := &fakePayloads{err: fmt.Errorf("%w: AccessDenied", queue.ErrPayloadGone)}
	f := newFixture(t, func(c *worker.Config) { c.Payloads = payloads })
	runs := 0
	f.reg.Handle("stripe", worker.Any, func(context.Context, *worker.Event) error { runs++; return nil })
	r := rec(t, e, 1)
	r.Body = pointer
	r.MessageAttributes = sqsAttributes(queue.EnvelopeIdentity(e).Attributes())
	r.MessageAttributes[queue.SizeAttribute] = events.SQSMessageAttribute{DataType: "Number", StringValue: ptr(fmt.Sprint(len(full)))}
	if resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}}); len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 1 {
		t.Fatalf("unreadable body: failures %v, %d dead letters; want dead-lettered", failed(resp), len(f.sqs.sent))
	}
	dead := f.sqs.sent[0].msg
	if dead.Attributes[worker.AttrEventKey] != e.Key || dead.Attributes[queue.AttrReceivedAt] == "" {
		t.Errorf("dead letter attributes = %v, want its event named (key %s, receivedAt)", dead.Attributes, e.Key)
	}
	payloads.err, payloads.bodies = nil, map[string][]byte{pointer: full}
	r.Attributes["ApproximateReceiveCount"] = "2" // its deletion was lost
	resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
	if len(resp.BatchItemFailures) != 0 || runs != 0 {
		t.Errorf("redelivered copy, body readable again: failures %v, handler ran %d; want deleted, nothing run", failed(resp), runs)
	}
	byHand := recAs(t, "m-denied-by-hand", e, 1)
	byHand.Body = string(dead.Body)
	if resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{byHand}}); len(resp.BatchItemFailures) != 0 || runs != 1 {
		t.Errorf("the dead letter's body re-sent by hand: failures %v, handler ran %d; want it replayed once", failed(resp), runs)
	}
}

// A later copy of a done event that is dead-lettered before it claims
// anything (here its offloaded body is gone) is judged by the event's record
// under its queue's incarnation: when the incarnation cannot be read, the
// copy comes back instead of being dead-lettered under a fence of no series,
// which the record of the done event would not recognise (make simulate
// SEED=4 dead-lettered a done event at its 30th receive, its time running
// out before the read). Once the queue can be read, the copy is deleted.
func TestDeadLetterWaitsForItsQueueIncarnation(t *testing.T) {
	const pointer = `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"hp-acme.fifo/d3"}]`
	q := &fakeQueues{created: "1700000000"}
	payloads := &fakePayloads{}
	onLedgers(t, func(c *worker.Config) { c.Queues, c.Payloads = q, payloads }, func(t *testing.T, f *fixture, store records) {
		q.err = nil
		_, runs := oneEffect(f, true)
		e := env("incarnation-unread-"+t.Name()[len(t.Name())-6:], "IU")
		handle := func(r events.SQSMessage) events.SQSEventResponse {
			t.Helper()
			resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
			return resp
		}
		if resp := handle(rec(t, e, 1)); len(resp.BatchItemFailures) != 0 || len(runs()) != 1 {
			t.Fatalf("first delivery: failures %v, %d runs; want done once", failed(resp), len(runs()))
		}
		f.clock.Advance(time.Hour) // its claim's lease has ended
		// The sender's retry, enqueued again, offloaded, its object gone.
		again := reenqueued(e)
		full, err := again.Encode()
		if err != nil {
			t.Fatal(err)
		}
		copy := recAs(t, "m-"+e.EventID+"-again", again, 1)
		copy.Body = pointer
		copy.MessageAttributes = sqsAttributes(queue.EnvelopeIdentity(again).Attributes())
		copy.MessageAttributes[queue.SizeAttribute] = events.SQSMessageAttribute{DataType: "Number", StringValue: ptr(fmt.Sprint(len(full)))}
		q.err = errors.New("simulated ThrottlingException")
		if resp := handle(copy); len(resp.BatchItemFailures) != 1 || len(f.sqs.sent) != 0 {
			t.Fatalf("copy without its queue's incarnation: failures %v, %d dead letters; want it retried, not dead-lettered", failed(resp), len(f.sqs.sent))
		}
		k := ledger.Key{Tenant: e.Tenant, Event: e.Key, Effect: ledger.EventEffect}
		if r, err := store.Record(context.Background(), k); err != nil || r.Dead() {
			t.Fatalf("event record after the retried copy: %+v, %v; want it not dead", r, err)
		}
		q.err = nil
		copy.Attributes["ApproximateReceiveCount"] = "2"
		if resp := handle(copy); len(resp.BatchItemFailures) != 0 || len(f.sqs.sent) != 0 {
			t.Fatalf("copy, queue readable again: failures %v, %d dead letters; want it deleted", failed(resp), len(f.sqs.sent))
		}
		if got := outcomes(t, f.logs)[copy.MessageId]; got != "skipped_duplicate" || len(runs()) != 1 {
			t.Errorf("copy of the done event: outcome %q, %d runs; want skipped_duplicate, 1 run", got, len(runs()))
		}
	})
}
