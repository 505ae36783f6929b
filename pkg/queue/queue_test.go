package queue

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

func TestURL(t *testing.T) {
	if got := URL("https://sqs.us-east-1.amazonaws.com/1/stack-{tenant}.fifo", "acme"); got != "https://sqs.us-east-1.amazonaws.com/1/stack-acme.fifo" {
		t.Errorf("URL() = %q", got)
	}
}

func TestSizeCountsAttributes(t *testing.T) {
	m := Message{Body: []byte("12345"), Attributes: map[string]string{"reason": "abc"}}
	if got, want := m.Size(), 5+len("reason")+len("String")+3; got != want {
		t.Errorf("Size() = %d, want %d", got, want)
	}
}

func TestSendOnMoto(t *testing.T) {
	ctx := context.Background()
	client := sqs.NewFromConfig(awstest.Config(t, awstest.Moto(t)))
	pair, err := provision.QueuePair(ctx, client, awstest.Name(t), provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(pair.URL, ".fifo") || !strings.HasSuffix(pair.DLQURL, "-dlq.fifo") {
		t.Fatalf("pair = %+v", pair)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(pair.URL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(attrs.Attributes["RedrivePolicy"], "-dlq.fifo") || attrs.Attributes["FifoQueue"] != "true" {
		t.Errorf("queue attributes = %v", attrs.Attributes)
	}
	q := NewSQS(client)
	m := Message{GroupID: "g1", DeduplicationID: "d1", Body: []byte(`{"a":1}`), Attributes: map[string]string{"reason": "x"}}
	for range 2 { // the second send is dropped by FIFO deduplication
		if _, err := q.Send(ctx, pair.URL, m); err != nil {
			t.Fatalf("Send() = %v", err)
		}
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(pair.URL), MaxNumberOfMessages: 10,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("received %d messages, want 1 (deduplicated)", len(out.Messages))
	}
	got := out.Messages[0]
	if aws.ToString(got.Body) != `{"a":1}` || got.Attributes["MessageGroupId"] != "g1" || aws.ToString(got.MessageAttributes["reason"].StringValue) != "x" {
		t.Errorf("message = %+v", got)
	}
	big := Message{GroupID: "g", DeduplicationID: "d2", Body: make([]byte, MaxMessageBytes+1)}
	if _, err := q.Send(ctx, pair.URL, big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Send(too large) = %v, want ErrTooLarge", err)
	}
}
