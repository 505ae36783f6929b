package idempotency_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/idempotency/idempotencytest"
	"github.com/hookpack/hookpack/pkg/local/awscount"
	"github.com/hookpack/hookpack/pkg/local/awstest"
)

var opts = func(c *idempotencytest.Clock) idempotency.Options {
	return idempotency.Options{Retention: idempotencytest.Retention, Now: c.Now}
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

// A completion whose response is lost is retried by the SDK, and the retry
// fails the condition the first attempt satisfied: the call must still
// succeed, from the record the failed condition returns (no extra read).
func TestDynamoDBSurvivesALostResponse(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := awstest.Config(t, b.endpoint(t))
			table := awstest.Name(t)
			if err := provision.Idempotency(ctx, dynamodb.NewFromConfig(cfg), table); err != nil {
				t.Fatalf("CreateTable: %v", err)
			}
			client := &losingClient{HTTPClient: cfg.HTTPClient, lose: map[string]bool{"PutItem": true}}
			cfg.HTTPClient = client
			counter := awscount.New()
			s := idempotency.NewDynamoDB(dynamodb.NewFromConfig(counter.Install(cfg)), table, idempotency.Options{})

			const key = "tenant#provider#lost-response"
			if err := s.Check(ctx, key, "digest"); err != nil {
				t.Fatalf("Check() = %v", err)
			}
			if err := s.Complete(ctx, key, "digest"); err != nil {
				t.Fatalf("Complete() with its response lost = %v, want success", err)
			}
			if len(client.lose) != 0 {
				t.Fatal("no PutItem response was lost: the test tested nothing")
			}
			want := map[string]int{"DynamoDB.GetItem": 1, "DynamoDB.PutItem": 2}
			if got := counter.Take(); !maps.Equal(got, want) {
				t.Errorf("requests = %v, want %v (the lost one and the SDK's retry, no read)", got, want)
			}
			if err := s.Check(ctx, key, "digest"); !errors.Is(err, idempotency.ErrDuplicate) {
				t.Errorf("Check() after Complete() = %v, want ErrDuplicate", err)
			}
		})
	}
}

var backends = []struct {
	name     string
	endpoint func(t testing.TB) string
}{
	{"DynamoDB Local", awstest.DynamoDBLocal},
	{"moto", awstest.Moto},
}

// An INPROGRESS record of an earlier version (its claim, with a lease,
// written before the send) never answered 2xx on its own: the key is free,
// and the completion writes over it, live lease or not.
func TestDynamoDBLegacyClaimIsFree(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			client := dynamodb.NewFromConfig(awstest.Config(t, b.endpoint(t)))
			table := awstest.Name(t)
			if err := provision.Idempotency(ctx, client, table); err != nil {
				t.Fatalf("CreateTable: %v", err)
			}
			now := time.Now()
			const key = "tenant#provider#legacy"
			n := func(v int64) types.AttributeValue {
				return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
			}
			if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]types.AttributeValue{
				"id": &types.AttributeValueMemberS{Value: key}, "status": &types.AttributeValueMemberS{Value: "INPROGRESS"},
				"expiration": n(now.Add(time.Hour).Unix()), "in_progress_expiration": n(now.Add(30 * time.Second).UnixMilli()),
				"validation": &types.AttributeValueMemberS{Value: "digest"}, "lease_token": &types.AttributeValueMemberS{Value: "t"},
			}}); err != nil {
				t.Fatal(err)
			}
			s := idempotency.NewDynamoDB(client, table, idempotency.Options{})
			if r, err := s.Record(ctx, key); err != nil || r.Status != idempotency.StatusInProgress || r.LeaseExpires.IsZero() {
				t.Fatalf("Record() = %+v, %v; want the legacy INPROGRESS record with its lease", r, err)
			}
			if err := s.Check(ctx, key, "digest"); err != nil {
				t.Fatalf("Check() of a legacy claim = %v, want free", err)
			}
			if err := s.Complete(ctx, key, "digest"); err != nil {
				t.Fatalf("Complete() over a legacy claim = %v, want success", err)
			}
			if err := s.Check(ctx, key, "digest"); !errors.Is(err, idempotency.ErrDuplicate) {
				t.Errorf("Check() after Complete() = %v, want ErrDuplicate", err)
			}
		})
	}
}
