// Package esm does locally what Lambda's SQS event source mapping does in
// AWS: Receive builds the events.SQSEvent the worker handler takes from a
// real receive (system attributes included), Settle deletes what the
// handler's partial batch response did not report failed, and Poller runs
// that loop for one queue in `make run` and the end-to-end tests.
package esm

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// ARNOf derives a queue's ARN from its URL ("<scheme>://<host>/<account>/<name>").
func ARNOf(queueURL, region string) string {
	parts := strings.Split(strings.TrimRight(queueURL, "/"), "/")
	if len(parts) < 2 {
		return ""
	}
	return "arn:aws:sqs:" + region + ":" + parts[len(parts)-2] + ":" + parts[len(parts)-1]
}

// ReceiveOptions tune Receive; zero values mean the mapping's behaviour
// for FIFO queues: up to 10 messages, no long-poll wait.
type ReceiveOptions struct {
	// Max is the batch size (1-10, default 10).
	Max int32
	// WaitSeconds is the long-poll wait (default 0).
	WaitSeconds int32
	// Region is the records' awsRegion (default: the client's region, or
	// us-east-1).
	Region string
}

type receiver interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
}

// Receive receives one batch from queueURL as the event Lambda delivers.
func Receive(ctx context.Context, client receiver, queueURL string, o ReceiveOptions) (events.SQSEvent, error) {
	if o.Max <= 0 || o.Max > 10 {
		o.Max = 10
	}
	if o.Region == "" {
		o.Region = "us-east-1"
		if c, ok := client.(interface{ Options() sqs.Options }); ok && c.Options().Region != "" {
			o.Region = c.Options().Region
		}
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(queueURL),
		MaxNumberOfMessages:         o.Max,
		WaitTimeSeconds:             o.WaitSeconds,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return events.SQSEvent{}, fmt.Errorf("receive from %s: %w", queueURL, err)
	}
	return FromMessages(out.Messages, ARNOf(queueURL, o.Region), o.Region), nil
}

// FromMessages builds the event Lambda delivers for msgs from queueARN.
func FromMessages(msgs []types.Message, queueARN, region string) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		rec := events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             m.Attributes,
			EventSource:            "aws:sqs",
			EventSourceARN:         queueARN,
			AWSRegion:              region,
			MessageAttributes:      map[string]events.SQSMessageAttribute{},
		}
		for k, v := range m.MessageAttributes {
			rec.MessageAttributes[k] = events.SQSMessageAttribute{
				StringValue: v.StringValue,
				BinaryValue: v.BinaryValue,
				DataType:    aws.ToString(v.DataType),
			}
		}
		ev.Records = append(ev.Records, rec)
	}
	return ev
}

type deleter interface {
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

// Settle does what the event source mapping does with a function's partial
// batch response: delete every record of ev not listed in
// resp.BatchItemFailures; failed records stay for their visibility timeout
// (then SQS redelivers them, or redrives them to the DLQ after
// maxReceiveCount).
func Settle(ctx context.Context, client deleter, queueURL string, ev events.SQSEvent, resp events.SQSEventResponse) error {
	failed := make(map[string]bool, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var del []types.DeleteMessageBatchRequestEntry
	for _, r := range ev.Records {
		if !failed[r.MessageId] {
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(r.MessageId), ReceiptHandle: aws.String(r.ReceiptHandle)})
		}
	}
	if len(del) == 0 {
		return nil
	}
	out, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: del})
	if err != nil {
		return fmt.Errorf("delete %d messages from %s: %w", len(del), queueURL, err)
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("delete from %s: %d failed: %s", queueURL, len(out.Failed), aws.ToString(out.Failed[0].Message))
	}
	return nil
}
