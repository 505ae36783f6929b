package inspect_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/hookpack/hookpack/pkg/inspect"
)

// stacks is a DescribeStacks that answers one stack.
type stacks struct {
	stack cftypes.Stack
	err   error
}

func (s stacks) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	if s.err != nil {
		return nil, s.err
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cftypes.Stack{s.stack}}, nil
}

func stack(outputs map[string]string, params map[string]string) cftypes.Stack {
	var st cftypes.Stack
	for k, v := range outputs {
		st.Outputs = append(st.Outputs, cftypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	for k, v := range params {
		st.Parameters = append(st.Parameters, cftypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	return st
}

func TestFromStack(t *testing.T) {
	core := map[string]string{
		"IdempotencyTableName":  "hookpack-IdempotencyTable-1",
		"LedgerTableName":       "hookpack-LedgerTable-1",
		"PayloadBucketName":     "hookpack-payloads-1",
		"QueueUrlPattern":       "https://sqs.eu-west-1.amazonaws.com/123456789012/hookpack_{tenant}.fifo",
		"WebhookBaseUrl":        "https://abc.execute-api.eu-west-1.amazonaws.com",
		"TenantParameterPrefix": "/hookpack/tenants",
	}
	failure := errors.New("access denied")
	tests := []struct {
		name    string
		api     stacks
		want    inspect.Deployment
		wantErr error
	}{
		{"core stack", stacks{stack: stack(core, map[string]string{"DedupRetentionHours": "72", "WorkerMaxAttempts": "15"})}, inspect.Deployment{
			IdempotencyTable: core["IdempotencyTableName"], LedgerTable: core["LedgerTableName"], PayloadBucket: core["PayloadBucketName"],
			QueueURLTemplate: core["QueueUrlPattern"], DedupRetention: 72 * time.Hour, MaxAttempts: 15, IngestLogGroup: "/hookpack/hookpack/ingest",
			WorkerLogGroup: "/hookpack/hookpack/worker", ParameterPrefix: "/hookpack",
		}, nil},
		{"tenant stack", stacks{stack: stack(map[string]string{"TenantId": "acme", "QueueUrl": "https://…"}, nil)}, inspect.Deployment{}, inspect.ErrNotCoreStack},
		{"no access", stacks{err: failure}, inspect.Deployment{}, failure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := inspect.FromStack(context.Background(), tt.api, "hookpack")
			if !errors.Is(err, tt.wantErr) || err == nil && got != tt.want {
				t.Errorf("FromStack() = %+v, %v; want %+v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
