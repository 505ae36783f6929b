package provision

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

type adminAPI interface {
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, opts ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Pair is a FIFO queue and its FIFO dead-letter queue.
type Pair struct {
	URL    string
	DLQURL string
}

// PairOptions mirror the queue properties template.yaml deploys.
type PairOptions struct {
	// VisibilityTimeout in seconds (≥ 6× the worker timeout).
	VisibilityTimeout int
	// MaxReceiveCount before SQS redrives a message to the DLQ.
	MaxReceiveCount int
}

// QueuePair creates "<name>.fifo" and "<name>-dlq.fifo" with a redrive
// policy, for local stacks and tests (in AWS they are infrastructure as
// code). Creating an existing pair with the same attributes is a no-op.
func QueuePair(ctx context.Context, client adminAPI, name string, o PairOptions) (Pair, error) {
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name + "-dlq.fifo"),
		Attributes: map[string]string{
			"FifoQueue":              "true",
			"MessageRetentionPeriod": "1209600",
		},
	})
	if err != nil {
		return Pair{}, fmt.Errorf("create %s-dlq.fifo: %w", name, err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       dlq.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return Pair{}, fmt.Errorf("dlq arn of %s: %w", name, err)
	}
	redrive := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`,
		attrs.Attributes[string(types.QueueAttributeNameQueueArn)], o.MaxReceiveCount)
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name + ".fifo"),
		Attributes: map[string]string{
			"FifoQueue":              "true",
			"DeduplicationScope":     "messageGroup", // as template-tenant.yaml
			"FifoThroughputLimit":    "perMessageGroupId",
			"VisibilityTimeout":      strconv.Itoa(o.VisibilityTimeout),
			"MessageRetentionPeriod": "1209600",
			"RedrivePolicy":          redrive,
		},
	})
	if err != nil {
		return Pair{}, fmt.Errorf("create %s.fifo: %w", name, err)
	}
	return Pair{URL: aws.ToString(q.QueueUrl), DLQURL: aws.ToString(dlq.QueueUrl)}, nil
}
