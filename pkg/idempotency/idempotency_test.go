package idempotency_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/idempotency/idempotencytest"
	"github.com/hookpack/hookpack/pkg/local/awscount"
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

// losingClient sends every request but drops the response of the first
// request to each operation in lose, as a connection reset after DynamoDB
// wrote would: the SDK's retryer sends the request again.
type losingClient struct {
	aws.HTTPClient
	mu   sync.Mutex
	lose map[string]bool // DynamoDB operations, e.g. "UpdateItem"
}

func (c *losingClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.HTTPClient.Do(req)
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	c.mu.Lock()
	lose := c.lose[op]
	delete(c.lose, op)
	c.mu.Unlock()
	if err != nil || !lose {
		return resp, err
	}
	resp.Body.Close()
	return nil, errors.New("read tcp: connection reset by peer")
}

// A claim or completion whose response is lost is retried by the SDK, and
// the retry fails the condition the first attempt satisfied: the call must
// still succeed, from the record the failed condition returns (no extra
// read). A claim that answered "in flight" here would leave its own lease
// in the way of the sender's retries until it ran out.
func TestDynamoDBSurvivesALostResponse(t *testing.T) {
	backends := []struct {
		name     string
		endpoint func(t testing.TB) string
	}{
		{"DynamoDB Local", awstest.DynamoDBLocal},
		{"moto", awstest.Moto},
	}
	tests := []struct {
		lost string // the operation whose first response is lost
		want map[string]int
	}{
		{"PutItem", map[string]int{"DynamoDB.PutItem": 2, "DynamoDB.UpdateItem": 1}},
		{"UpdateItem", map[string]int{"DynamoDB.PutItem": 1, "DynamoDB.UpdateItem": 2}},
	}
	for _, b := range backends {
		for _, tt := range tests {
			t.Run(b.name+"/"+tt.lost, func(t *testing.T) {
				ctx := context.Background()
				cfg := awstest.Config(t, b.endpoint(t))
				table := awstest.Name(t)
				if err := provision.Idempotency(ctx, dynamodb.NewFromConfig(cfg), table); err != nil {
					t.Fatalf("CreateTable: %v", err)
				}
				client := &losingClient{HTTPClient: cfg.HTTPClient, lose: map[string]bool{tt.lost: true}}
				cfg.HTTPClient = client
				counter := awscount.New()
				s := idempotency.NewDynamoDB(dynamodb.NewFromConfig(counter.Install(cfg)), table, idempotency.Options{})

				c, err := s.Claim(ctx, "tenant#provider#lost-response", "digest")
				if err != nil {
					t.Fatalf("Claim() with its %s response lost = %v, want success", tt.lost, err)
				}
				if err := s.Complete(ctx, c); err != nil {
					t.Fatalf("Complete() with its %s response lost = %v, want success", tt.lost, err)
				}
				if len(client.lose) != 0 {
					t.Fatalf("no %s response was lost: the test tested nothing", tt.lost)
				}
				if got := counter.Take(); !maps.Equal(got, tt.want) {
					t.Errorf("requests = %v, want %v (the lost one and the SDK's retry, no read)", got, tt.want)
				}
				if _, err := s.Claim(ctx, c.Key, "digest"); !errors.Is(err, idempotency.ErrDuplicate) {
					t.Errorf("Claim() after Complete() = %v, want ErrDuplicate", err)
				}
			})
		}
	}
}
