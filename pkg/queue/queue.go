// Package queue sends envelopes to a tenant's FIFO SQS queue.
//
// Every send carries a MessageGroupId (the conversation: SQS delivers one
// group strictly in order, groups in parallel) and a MessageDeduplicationId
// (from the idempotency key: a resend within SQS's 5-minute window is
// dropped by SQS itself, a second line of defence behind the claim).
package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// MaxMessageBytes is the default size limit of one message (body plus
// attributes). SQS accepts up to 1 MiB today; 256 KiB is the long-standing
// limit every SQS-compatible consumer handles, and the queue's
// MaximumMessageSize in template.yaml must be at least the configured value.
const MaxMessageBytes = 256 * 1024

// ErrTooLarge is returned for messages over the configured limit.
var ErrTooLarge = errors.New("message too large")

// Message is one FIFO message.
type Message struct {
	GroupID         string
	DeduplicationID string
	Body            []byte
	// Attributes are string message attributes (e.g. the failure reason on
	// a dead-lettered message).
	Attributes map[string]string
}

// Size is the message's size as SQS counts it: body plus attribute names,
// types and values.
func (m Message) Size() int {
	n := len(m.Body)
	for k, v := range m.Attributes {
		n += len(k) + len("String") + len(v)
	}
	return n
}

type sqsAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SQS sends messages with the SQS API.
type SQS struct {
	client sqsAPI
}

// NewSQS returns a sender.
func NewSQS(client sqsAPI) *SQS { return &SQS{client: client} }

// Send puts m on the FIFO queue at url and returns the SQS message id. It
// returns ErrTooLarge without calling SQS for an oversized message, or a
// wrapped AWS error.
func (q *SQS) Send(ctx context.Context, url string, m Message) (string, error) {
	if m.Size() > MaxMessageBytes {
		return "", fmt.Errorf("send to %s: %d bytes: %w", queueName(url), m.Size(), ErrTooLarge)
	}
	in := &sqs.SendMessageInput{
		QueueUrl:               aws.String(url),
		MessageBody:            aws.String(string(m.Body)),
		MessageGroupId:         aws.String(m.GroupID),
		MessageDeduplicationId: aws.String(m.DeduplicationID),
	}
	if len(m.Attributes) > 0 {
		in.MessageAttributes = make(map[string]types.MessageAttributeValue, len(m.Attributes))
		for k, v := range m.Attributes {
			in.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
	}
	out, err := q.client.SendMessage(ctx, in)
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", queueName(url), err)
	}
	return aws.ToString(out.MessageId), nil
}

// URL expands a queue URL template ("…/hookpack-{tenant}.fifo") for tenant.
func URL(template, tenant string) string {
	return strings.ReplaceAll(template, "{tenant}", tenant)
}

func queueName(url string) string {
	return url[strings.LastIndexByte(url, '/')+1:]
}
