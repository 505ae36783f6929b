package emulator_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

// TestMotoSequenceNumbersIncrease: the moto the project starts numbers FIFO
// messages as AWS does, increasing in queue order with 20 digits (moto
// 5.2.1 alone draws random digits), so fencing by SequenceNumber can be
// tested locally.
func TestMotoSequenceNumbersIncrease(t *testing.T) {
	ctx := context.Background()
	client := sqs.NewFromConfig(awstest.Config(t, awstest.Moto(t)))
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(awstest.Name(t) + ".fifo"),
		Attributes: map[string]string{"FifoQueue": "true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for i := range 12 {
		out, err := client.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: q.QueueUrl, MessageBody: aws.String(fmt.Sprint(i)),
			MessageGroupId: aws.String(fmt.Sprint("g", i%2)), MessageDeduplicationId: aws.String(fmt.Sprint("d", i)),
		})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, aws.ToString(out.SequenceNumber))
	}
	for i, s := range sent {
		if len(s) != 20 || (i > 0 && s <= sent[i-1]) {
			t.Fatalf("SequenceNumbers = %v, want 20 digits, increasing in send order", sent)
		}
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameSequenceNumber},
	})
	if err != nil || len(out.Messages) == 0 {
		t.Fatalf("ReceiveMessage() = %v, %v", out, err)
	}
	for _, m := range out.Messages {
		var i int
		fmt.Sscan(aws.ToString(m.Body), &i)
		if got := m.Attributes["SequenceNumber"]; got != sent[i] {
			t.Errorf("message %d received with SequenceNumber %q, sent with %q", i, got, sent[i])
		}
	}
}
