// Package sqsevent does locally what Lambda's SQS event source mapping does
// in AWS: it receives messages into the events.SQSEvent the worker handler
// takes (system attributes such as ApproximateReceiveCount, MessageGroupId
// and SequenceNumber included), settles a batch from the handler's
// events.SQSEventResponse (deleting every record not reported failed), and
// maps an eventSourceARN back to its queue URL. Local runs and integration
// tests use it so the worker sees real-shaped batches built from real
// receives.
package sqsevent

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// ErrInvalidARN: the string is not an SQS queue ARN.
var ErrInvalidARN = errors.New("invalid SQS queue ARN")

// ARN is a parsed queue ARN.
type ARN struct {
	Partition, Region, Account, Name string
}

// String formats the ARN.
func (a ARN) String() string {
	return "arn:" + a.Partition + ":sqs:" + a.Region + ":" + a.Account + ":" + a.Name
}

// ParseARN parses "arn:<partition>:sqs:<region>:<account>:<name>".
func ParseARN(s string) (ARN, error) {
	p := strings.Split(s, ":")
	if len(p) != 6 || p[0] != "arn" || p[2] != "sqs" || p[1] == "" || p[3] == "" || p[4] == "" || p[5] == "" {
		return ARN{}, fmt.Errorf("%w: %q", ErrInvalidARN, s)
	}
	return ARN{Partition: p[1], Region: p[3], Account: p[4], Name: p[5]}, nil
}

// QueueURL returns the URL of the queue named by an eventSourceARN. The
// scheme and host come from template (any absolute queue URL of the
// deployment, e.g. the QUEUE_URL_TEMPLATE, which points at an emulator
// locally); an empty template means the public SQS endpoint of the ARN's
// region and partition.
func QueueURL(arn, template string) (string, error) {
	a, err := ParseARN(arn)
	if err != nil {
		return "", err
	}
	if template == "" {
		host := "sqs." + a.Region + ".amazonaws.com"
		if a.Partition == "aws-cn" {
			host += ".cn"
		}
		return "https://" + host + "/" + a.Account + "/" + a.Name, nil
	}
	u, err := url.Parse(strings.ReplaceAll(template, "{tenant}", "x"))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("queue URL template %q is not an absolute URL", template)
	}
	return u.Scheme + "://" + u.Host + "/" + a.Account + "/" + a.Name, nil
}

// ARNOf derives a queue's ARN from its URL ("<scheme>://<host>/<account>/<name>").
func ARNOf(queueURL, region string) string {
	parts := strings.Split(strings.TrimRight(queueURL, "/"), "/")
	if len(parts) < 2 {
		return ""
	}
	return ARN{Partition: "aws", Region: region, Account: parts[len(parts)-2], Name: parts[len(parts)-1]}.String()
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
