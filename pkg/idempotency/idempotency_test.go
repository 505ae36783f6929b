package idempotency_test

import (
	"context"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/idempotency/idempotencytest"
	"github.com/hookpack/hookpack/pkg/local/awstest"
)

var opts = func(c *idempotencytest.Clock) idempotency.Options {
	return idempotency.Options{Lease: idempotencytest.Lease, Retention: idempotencytest.Retention, Now: c.Now}
}

func TestMemoryContract(t *testing.T) {
	idempotencytest.Run(t, func(t *testing.T, c *idempotencytest.Clock) idempotencytest.Store {
		return idempotency.NewMemory(opts(c))
	}, idempotencytest.Quirks{})
}

func TestDynamoDBLocalContract(t *testing.T) {
	runDynamo(t, awstest.DynamoDBLocal(t), idempotencytest.Quirks{})
}

func TestMotoContract(t *testing.T) {
	runDynamo(t, awstest.Moto(t), idempotencytest.Quirks{NonAtomicConditionalWrites: true})
}

func runDynamo(t *testing.T, endpoint string, q idempotencytest.Quirks) {
	client := dynamodb.NewFromConfig(awstest.Config(t, endpoint))
	idempotencytest.Run(t, func(t *testing.T, c *idempotencytest.Clock) idempotencytest.Store {
		table := awstest.Name(t)
		if err := provision.Idempotency(context.Background(), client, table); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		return idempotency.NewDynamoDB(client, table, opts(c))
	}, q)
}
