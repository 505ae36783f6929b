package worker_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/worker"
)

// records reads effect records back from either ledger.
type records interface {
	Record(ctx context.Context, k ledger.Key) (ledger.Record, error)
}

// onLedgers runs test on a fixture (mod applied) over each twin of the
// ledger: in memory, and DynamoDB on DynamoDB Local, with the fixture's
// clock. A rule of the worker that depends on what the ledger answers holds
// on both.
func onLedgers(t *testing.T, mod func(c *worker.Config), test func(t *testing.T, f *fixture, store records)) {
	t.Run("memory", func(t *testing.T) {
		f := newFixture(t, mod)
		test(t, f, f.ledger)
	})
	t.Run("dynamodb-local", func(t *testing.T) {
		client := dynamodb.NewFromConfig(awstest.Config(t, awstest.DynamoDBLocal(t)))
		table := awstest.Name(t)
		if err := provision.Ledger(context.Background(), client, table); err != nil {
			t.Fatal(err)
		}
		var store *ledger.DynamoDB
		f := newFixture(t, func(c *worker.Config) {
			if mod != nil {
				mod(c)
			}
			store = ledger.NewDynamoDB(client, table, ledger.Options{Now: c.Now})
			c.Ledger = store
		})
		test(t, f, store)
	})
}
