package emulator_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// arn returns the ARN of the queue at url.
func (f *fifo) arn(url string) string {
	f.t.Helper()
	out, err := f.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out.Attributes[string(types.QueueAttributeNameQueueArn)]
}

// release makes m, received from url, visible again.
func (f *fifo) release(url string, m types.Message) {
	f.t.Helper()
	_, err := f.client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
}

// receiveAll is receive with every message attribute.
func (f *fifo) receiveAll(url string) []types.Message {
	f.t.Helper()
	out, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 30,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out.Messages
}

// redrive starts a move task from the pair's DLQ to dest ("" for each
// message's source queue) and returns the task as ListMessageMoveTasks
// reports it.
func (f *fifo) redrive(dest string) types.ListMessageMoveTasksResultEntry {
	f.t.Helper()
	ctx := context.Background()
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(f.arn(f.pair.DLQURL))}
	if dest != "" {
		in.DestinationArn = aws.String(dest)
	}
	start, err := f.client.StartMessageMoveTask(ctx, in)
	if err != nil {
		f.t.Fatalf("StartMessageMoveTask() = %v", err)
	}
	if aws.ToString(start.TaskHandle) == "" {
		f.t.Error("StartMessageMoveTask() returned no TaskHandle")
	}
	list, err := f.client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: in.SourceArn})
	if err != nil || len(list.Results) != 1 {
		f.t.Fatalf("ListMessageMoveTasks() = %+v, %v; want the one task", list, err)
	}
	return list.Results[0]
}

var groupAttrs = map[string]types.MessageAttributeValue{
	"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
}

// TestRedriveFIFO: StartMessageMoveTask moves a FIFO DLQ's messages back as
// new messages, as AWS documents ("All redriven messages are considered new
// messages with a new messageID and enqueueTime"): same body, group and
// message attributes; new MessageId, SequenceNumber and SentTimestamp; not
// yet received.
func TestRedriveFIFO(t *testing.T) {
	f := newFIFO(t, 1)
	ctx := context.Background()
	sourceARN := f.arn(f.pair.URL)
	_, err := f.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(f.pair.URL), MessageBody: aws.String("m1"), MessageAttributes: groupAttrs,
		MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	first := f.receiveAll(f.pair.URL)
	f.expect("first receive", first, "m1")
	f.release(f.pair.URL, first[0])
	f.expect("after maxReceiveCount", f.receive(f.pair.URL, 10, 30))
	dead := f.receiveAll(f.pair.DLQURL)
	f.expect("dead-letter queue", dead, "m1")
	orig, letter := first[0], dead[0]
	if got := letter.Attributes["DeadLetterQueueSourceArn"]; got != sourceARN {
		t.Errorf("dead letter DeadLetterQueueSourceArn = %q, want %q", got, sourceARN)
	}
	if got := letter.Attributes["MessageDeduplicationId"]; got != aws.ToString(letter.MessageId) {
		t.Errorf("dead letter MessageDeduplicationId = %q, want its MessageId %q (AWS replaces it)", got, aws.ToString(letter.MessageId))
	}
	if task := f.redrive(""); aws.ToString(task.Status) != "COMPLETED" || task.ApproximateNumberOfMessagesMoved != 0 {
		t.Errorf("task while the dead letter is in flight = %+v, want COMPLETED with nothing moved", task)
	}
	f.release(f.pair.DLQURL, letter)

	task := f.redrive("")
	if aws.ToString(task.Status) != "COMPLETED" || task.ApproximateNumberOfMessagesMoved != 1 ||
		aws.ToInt64(task.ApproximateNumberOfMessagesToMove) != 1 || task.DestinationArn != nil || task.TaskHandle != nil {
		t.Errorf("task = %+v, want COMPLETED, 1 of 1 moved, no DestinationArn, no TaskHandle", task)
	}
	back := f.receiveAll(f.pair.URL)
	f.expect("source after redrive", back, "m1")
	m := back[0]
	if aws.ToString(m.MessageId) == aws.ToString(orig.MessageId) {
		t.Errorf("redriven MessageId = %s, the original's; want a new one", aws.ToString(m.MessageId))
	}
	if g := m.Attributes["MessageGroupId"]; g != "g" {
		t.Errorf("redriven MessageGroupId = %q, want g", g)
	}
	if a := m.MessageAttributes["tenant"]; aws.ToString(a.StringValue) != "acme" || aws.ToString(a.DataType) != "String" {
		t.Errorf("redriven message attribute tenant = %+v, want String acme", a)
	}
	if s, o := m.Attributes["SequenceNumber"], orig.Attributes["SequenceNumber"]; len(s) != 20 || s <= o {
		t.Errorf("redriven SequenceNumber = %q, want 20 digits greater than the original's %q", s, o)
	}
	sent, _ := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64)
	origSent, _ := strconv.ParseInt(orig.Attributes["SentTimestamp"], 10, 64)
	if sent <= origSent {
		t.Errorf("redriven SentTimestamp = %d, want later than the original's %d", sent, origSent)
	}
	if n := m.Attributes["ApproximateReceiveCount"]; n != "1" {
		t.Errorf("redriven ApproximateReceiveCount on its first receive = %s, want 1", n)
	}
	if _, ok := m.Attributes["DeadLetterQueueSourceArn"]; ok {
		t.Errorf("redriven message has DeadLetterQueueSourceArn %q; it is a new message", m.Attributes["DeadLetterQueueSourceArn"])
	}
	f.expect("dead-letter queue after redrive", f.receive(f.pair.DLQURL, 10, 30))
}

// TestRedriveClientDeadLetter: a dead letter a client sent to the DLQ itself
// (as the worker does) has no source queue: a task without DestinationArn
// fails and leaves it; with one, it moves, even within five minutes of a
// source message that has its deduplication id.
func TestRedriveClientDeadLetter(t *testing.T) {
	f := newFIFO(t, 5)
	ctx := context.Background()
	for _, m := range []struct{ url, body, group string }{{f.pair.URL, "live", "other"}, {f.pair.DLQURL, "dead", "g"}} {
		_, err := f.client.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(m.url), MessageBody: aws.String(m.body), MessageAttributes: groupAttrs,
			MessageGroupId: aws.String(m.group), MessageDeduplicationId: aws.String("evt-1"),
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	task := f.redrive("")
	if aws.ToString(task.Status) != "FAILED" || aws.ToString(task.FailureReason) == "" || task.ApproximateNumberOfMessagesMoved != 0 {
		t.Errorf("task without DestinationArn = %+v, want FAILED with a reason, nothing moved", task)
	}
	dead := f.receiveAll(f.pair.DLQURL)
	f.expect("dead-letter queue after the failed task", dead, "dead")
	f.release(f.pair.DLQURL, dead[0])

	task = f.redrive(f.arn(f.pair.URL))
	if aws.ToString(task.Status) != "COMPLETED" || task.ApproximateNumberOfMessagesMoved != 1 || aws.ToString(task.DestinationArn) != f.arn(f.pair.URL) {
		t.Errorf("task to the source queue = %+v, want COMPLETED, 1 moved, its DestinationArn", task)
	}
	got := map[string]types.Message{}
	for _, m := range f.receiveAll(f.pair.URL) {
		got[aws.ToString(m.Body)] = m
	}
	m, ok := got["dead"]
	if !ok || len(got) != 2 {
		t.Fatalf("source after redrive holds %v, want live and dead (the redrive must not be deduplicated against live)", got)
	}
	if m.Attributes["MessageGroupId"] != "g" || aws.ToString(m.MessageAttributes["tenant"].StringValue) != "acme" ||
		aws.ToString(m.MessageId) == aws.ToString(dead[0].MessageId) {
		t.Errorf("redriven message = %+v, want group g, attribute tenant=acme, a new MessageId", m)
	}
}

// TestMoveTaskErrors: the errors AWS answers for a bad move task request.
func TestMoveTaskErrors(t *testing.T) {
	f := newFIFO(t, 5)
	ctx := context.Background()
	missing := f.arn(f.pair.URL) + "-missing"
	tests := []struct {
		name string
		call func() error
		want string
	}{{
		name: "source is not a DLQ",
		call: func() error {
			_, err := f.client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(f.arn(f.pair.URL))})
			return err
		},
		want: "InvalidParameterValue",
	}, {
		name: "source does not exist",
		call: func() error {
			_, err := f.client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(missing)})
			return err
		},
		want: "ResourceNotFoundException",
	}, {
		name: "destination does not exist",
		call: func() error {
			_, err := f.client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
				SourceArn: aws.String(f.arn(f.pair.DLQURL)), DestinationArn: aws.String(missing),
			})
			return err
		},
		want: "ResourceNotFoundException",
	}, {
		name: "rate above 500",
		call: func() error {
			_, err := f.client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
				SourceArn: aws.String(f.arn(f.pair.DLQURL)), MaxNumberOfMessagesPerSecond: aws.Int32(501),
			})
			return err
		},
		want: "InvalidParameterValue",
	}, {
		name: "cancel an invalid handle",
		call: func() error {
			_, err := f.client.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String("foobared")})
			return err
		},
		want: "InvalidParameterValue",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var apiErr smithy.APIError
			if err := tt.call(); !errors.As(err, &apiErr) || apiErr.ErrorCode() != tt.want {
				t.Errorf("error = %v, want %s", err, tt.want)
			}
		})
	}
	var notFound *types.ResourceNotFoundException
	_, err := f.client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(missing)})
	if !errors.As(err, &notFound) {
		t.Errorf("StartMessageMoveTask(missing source) = %v, want a *types.ResourceNotFoundException", err)
	}
}
