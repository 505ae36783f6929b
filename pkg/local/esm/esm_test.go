package esm_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/queue"
)

func TestReceiveAndSettleOnMoto(t *testing.T) {
	ctx := context.Background()
	client := sqs.NewFromConfig(awstest.Config(t, awstest.Moto(t)))
	pair, err := provision.QueuePair(ctx, client, awstest.Name(t), provision.PairOptions{VisibilityTimeout: 60, MaxReceiveCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	q := queue.NewSQS(client)
	sent := map[string]string{} // message id → group
	for i, g := range []string{"conv-a", "conv-b", "conv-a"} {
		id, err := q.Send(ctx, pair.URL, queue.Message{
			GroupID: g, DeduplicationID: "d" + strconv.Itoa(i), Body: []byte("body-" + strconv.Itoa(i)),
			Attributes: map[string]string{"kind": "test"},
		})
		if err != nil {
			t.Fatal(err)
		}
		sent[id] = g
	}
	ev, err := esm.Receive(ctx, client, pair.URL, esm.ReceiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Records) != 3 {
		t.Fatalf("received %d records, want 3", len(ev.Records))
	}
	for _, r := range ev.Records {
		if sent[r.MessageId] == "" || r.Attributes["MessageGroupId"] != sent[r.MessageId] ||
			r.Attributes["ApproximateReceiveCount"] != "1" || r.Attributes["SequenceNumber"] == "" ||
			r.Attributes["MessageDeduplicationId"] == "" || r.ReceiptHandle == "" ||
			r.EventSource != "aws:sqs" || r.AWSRegion != awstest.Region {
			t.Errorf("record = %+v", r)
		}
		if a := r.MessageAttributes["kind"]; aws.ToString(a.StringValue) != "test" || a.DataType != "String" {
			t.Errorf("message attribute kind = %+v", a)
		}
		if url, err := queue.URLForARN(r.EventSourceARN, pair.URL); err != nil || url != pair.URL {
			t.Errorf("QueueURL(%s) = %q, %v; want the queue's own URL %s", r.EventSourceARN, url, err, pair.URL)
		}
	}
	// conv-a's two messages arrive in send order (SQS may put a group's
	// messages together, ahead of other groups).
	var convA []string
	for _, r := range ev.Records {
		if r.Attributes["MessageGroupId"] == "conv-a" {
			convA = append(convA, r.Body)
		}
	}
	if len(convA) != 2 || convA[0] != "body-0" || convA[1] != "body-2" {
		t.Errorf("conv-a bodies = %q, want [body-0 body-2]", convA)
	}

	keep := ev.Records[1].MessageId
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: keep}}}
	if err := esm.Settle(ctx, client, pair.URL, ev, resp); err != nil {
		t.Fatalf("Settle() = %v", err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(pair.URL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, nv := attrs.Attributes["ApproximateNumberOfMessages"], attrs.Attributes["ApproximateNumberOfMessagesNotVisible"]; v != "0" || nv != "1" {
		t.Errorf("after Settle: %s visible, %s in flight; want only the failed message left, in flight", v, nv)
	}
}
