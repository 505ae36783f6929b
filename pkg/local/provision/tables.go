// Package provision creates on the emulators what template.yaml deploys in
// AWS, for make run and integration tests: the idempotency and ledger tables
// (string partition key, on-demand billing, TTL) and each tenant's FIFO
// queue with its FIFO dead-letter queue.
package provision

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// API is the subset of the DynamoDB client Create uses.
type API interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// Create creates table with partition key hashKey (type S) and TTL on
// ttlAttribute. An existing table is not an error.
func Create(ctx context.Context, client API, table, hashKey, ttlAttribute string) error {
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(hashKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(hashKey), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(ttlAttribute), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("enable ttl on %s: %w", table, err)
	}
	return nil
}

// Idempotency creates the claim table as template.yaml deploys it:
// partition key "id", TTL on "expiration".
func Idempotency(ctx context.Context, client API, table string) error {
	return Create(ctx, client, table, "id", "expiration")
}

// Ledger creates the effect-ledger table as template.yaml deploys it:
// partition key "pk", TTL on "expiration".
func Ledger(ctx context.Context, client API, table string) error {
	return Create(ctx, client, table, "pk", "expiration")
}
