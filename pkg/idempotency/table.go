package idempotency

import (
	"context"

	"github.com/hookpack/hookpack/pkg/dynamotable"
)

// CreateTable creates the idempotency table with the schema template.yaml
// deploys (partition key "id", TTL on "expiration"). It is for local stacks
// and tests; in AWS the table is infrastructure as code. An existing table
// is not an error.
func CreateTable(ctx context.Context, client dynamotable.API, table string) error {
	return dynamotable.Create(ctx, client, table, attrID, attrExpiration)
}
