package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/internal/epoch"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/worker"
)

// clock is a fake time that moves by step at each reading.
type clock struct {
	t    time.Time
	step time.Duration
}

func (c *clock) Now() time.Time {
	t := c.t
	c.t = c.t.Add(c.step)
	return t
}

type fakeMsg struct {
	id, group, body, key string
	stream               string // queue.AttrStream, when set
	sent                 time.Time
	inFlight, deleted    bool
	handle               string
}

// fakeDLQ is a FIFO queue with SQS's documented group rule: while a
// message of a group is in flight, none of the group's messages is handed
// out; otherwise messages come in order, up to ten per receive.
type fakeDLQ struct {
	msgs    []*fakeMsg
	handles int
	// receives counts ReceiveMessage calls; afterReceive runs after each.
	receives     int
	afterReceive func(q *fakeDLQ)
	// failDelete and refuseVisibility act on message ids.
	failDelete       map[string]error
	refuseVisibility map[string]bool
	// oneGroup fills each receive from one group, as SQS FIFO may.
	oneGroup bool
}

var _ interface {
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
} = (*fakeDLQ)(nil)

// add dead-letters a message; key "" leaves out the event key attribute,
// and its body is not an envelope.
func (q *fakeDLQ) add(id, group, key string, sent time.Time) {
	q.msgs = append(q.msgs, &fakeMsg{id: id, group: group, key: key, body: "not an envelope", sent: sent})
}

func (q *fakeDLQ) get(id string) *fakeMsg {
	for _, m := range q.msgs {
		if m.id == id {
			return m
		}
	}
	return nil
}

// visible returns the ids of the messages that can be received.
func (q *fakeDLQ) visible() []string {
	var ids []string
	for _, m := range q.msgs {
		if !m.deleted && !m.inFlight {
			ids = append(ids, m.id)
		}
	}
	return ids
}

func (q *fakeDLQ) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	q.receives++
	if q.receives > maxReceives {
		return nil, errRunaway
	}
	blocked := map[string]bool{}
	for _, m := range q.msgs {
		if !m.deleted && m.inFlight {
			blocked[m.group] = true
		}
	}
	out := &sqs.ReceiveMessageOutput{}
	for _, m := range q.msgs {
		if m.deleted || m.inFlight || blocked[m.group] || len(out.Messages) == int(in.MaxNumberOfMessages) ||
			q.oneGroup && len(out.Messages) > 0 && out.Messages[0].Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] != m.group {
			continue
		}
		q.handles++
		m.inFlight, m.handle = true, m.id+"#"+strconv.Itoa(q.handles)
		attrs := map[string]types.MessageAttributeValue{
			worker.AttrGroupID: {DataType: aws.String("String"), StringValue: aws.String(m.group)},
			worker.AttrReason:  {DataType: aws.String("String"), StringValue: aws.String("target rejected the event")},
		}
		if m.key != "" {
			attrs[worker.AttrEventKey] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(m.key)}
		}
		if m.stream != "" {
			attrs[queue.AttrStream] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(m.stream)}
		}
		out.Messages = append(out.Messages, types.Message{
			MessageId: aws.String(m.id), ReceiptHandle: aws.String(m.handle), Body: aws.String(m.body),
			Attributes: map[string]string{
				string(types.MessageSystemAttributeNameSentTimestamp):  strconv.FormatInt(epoch.Millis(m.sent), 10),
				string(types.MessageSystemAttributeNameMessageGroupId): m.group,
			},
			MessageAttributes: attrs,
		})
	}
	if q.afterReceive != nil {
		q.afterReceive(q)
	}
	return out, nil
}

func (q *fakeDLQ) byHandle(h *string) (*fakeMsg, error) {
	for _, m := range q.msgs {
		if !m.deleted && m.handle == aws.ToString(h) {
			return m, nil
		}
	}
	return nil, &types.ReceiptHandleIsInvalid{Message: aws.String("stale receipt handle " + aws.ToString(h))}
}

func (q *fakeDLQ) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	m, err := q.byHandle(in.ReceiptHandle)
	if err != nil {
		return nil, err
	}
	if err := q.failDelete[m.id]; err != nil {
		return nil, err
	}
	m.deleted = true
	return &sqs.DeleteMessageOutput{}, nil
}

func (q *fakeDLQ) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		m, err := q.byHandle(e.ReceiptHandle)
		switch {
		case err != nil:
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid"), Message: aws.String(err.Error()), SenderFault: true})
		case q.refuseVisibility[m.id]:
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("try again"), SenderFault: false})
		default:
			m.inFlight = false
			out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
		}
	}
	return out, nil
}

// fakeSource records the messages sent to the source queue; fail and
// afterSend act on the DLQ message id a send carries.
type fakeSource struct {
	sent      []string // DLQ message ids, in send order
	fail      func(dlqID string) error
	afterSend func(dlqID string, m queue.Message)
}

func (s *fakeSource) Send(_ context.Context, url string, m queue.Message) (string, error) {
	id := m.Attributes[worker.AttrReplayOf]
	if s.fail != nil {
		if err := s.fail(id); err != nil {
			return "", err
		}
	}
	s.sent = append(s.sent, id)
	if s.afterSend != nil {
		s.afterSend(id, m)
	}
	return fmt.Sprintf("src-%d", len(s.sent)), nil
}

var (
	errThrottled = errors.New("throttled")
	errRunaway   = errors.New("fake DLQ: more than 100 receives in one test")
)

// maxReceives ends a run that would not end by itself.
const maxReceives = 100
