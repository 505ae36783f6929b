package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/ledger/ledgertest"
	"github.com/hookpack/hookpack/pkg/local/awstest"
)

var opts = func(c *ledgertest.Clock) ledger.Options {
	return ledger.Options{Lease: ledgertest.Lease, Retention: ledgertest.Retention, Now: c.Now}
}

func TestMemoryContract(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T, c *ledgertest.Clock) ledgertest.Store {
		return ledger.NewMemory(opts(c))
	}, ledgertest.Quirks{})
}

func TestDynamoDBLocalContract(t *testing.T) {
	runDynamo(t, awstest.DynamoDBLocal(t), ledgertest.Quirks{})
}

func TestMotoContract(t *testing.T) {
	runDynamo(t, awstest.Moto(t), ledgertest.Quirks{NonAtomicConditionalWrites: true})
}

func runDynamo(t *testing.T, endpoint string, q ledgertest.Quirks) {
	client := dynamodb.NewFromConfig(awstest.Config(t, endpoint))
	ledgertest.Run(t, func(t *testing.T, c *ledgertest.Clock) ledgertest.Store {
		table := awstest.Name(t)
		if err := provision.Ledger(context.Background(), client, table); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		return ledger.NewDynamoDB(client, table, opts(c))
	}, q)
}

// TestFenceAfterTheConversationExpired: DynamoDB's TTL deletes an idle
// conversation's fence item, and its counter starts again at 1, while
// entities (which never expire) still carry the old, higher tokens. The new
// series keeps those from fencing the conversation's writes forever. (A
// worker of the old series would have to be stuck for the whole retention
// to write again; nothing orders it but the version.)
func TestFenceAfterTheConversationExpired(t *testing.T) {
	backends := []struct {
		name     string
		endpoint func(testing.TB) string
	}{{"DynamoDBLocal", awstest.DynamoDBLocal}, {"moto", awstest.Moto}}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			client := dynamodb.NewFromConfig(awstest.Config(t, b.endpoint(t)))
			table := awstest.Name(t)
			if err := provision.Ledger(ctx, client, table); err != nil {
				t.Fatal(err)
			}
			s := ledger.NewDynamoDB(client, table, ledger.Options{})
			var old ledger.Fence
			for range 3 {
				f, err := s.Take(ctx, "acme", "cus_1")
				if err != nil {
					t.Fatal(err)
				}
				old = f
			}
			if err := s.Apply(ctx, old, ledger.Update{Entity: "customer:cus_1", Version: 1, Data: []byte("old")}); err != nil {
				t.Fatal(err)
			}
			// What the TTL reaper does to the idle conversation (its key as
			// doc.go's Table section lays it out).
			if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: aws.String(table),
				Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "cv|acme|cus_1"}},
			}); err != nil {
				t.Fatal(err)
			}
			f, err := s.Take(ctx, "acme", "cus_1")
			if err != nil || f.Token != 1 || f.Series == old.Series {
				t.Fatalf("Take() after expiry = %+v, %v; want token 1 of a new series (old %+v)", f, err, old)
			}
			if err := s.Apply(ctx, f, ledger.Update{Entity: "customer:cus_1", Version: 2, Data: []byte("new")}); err != nil {
				t.Errorf("Apply() with the restarted counter = %v, want success", err)
			}
		})
	}
}

func TestIdempotencyKey(t *testing.T) {
	base := ledger.Key{Tenant: "acme", Event: "acme#stripe#evt_1", Effect: "forward"}
	// The format is a contract with downstream systems: a change would make
	// them repeat effects, so the value is pinned.
	// (Computed independently: SHA-256 over the 8-byte big-endian length
	// and bytes of "hookpack-effect-v1", tenant, event key, effect.)
	const pinned = "26ee333f860324b2118d4c99df4e33c8bf98979cd82db1e877f8b892d4e49b7c"
	got := base.IdempotencyKey()
	if got != pinned {
		t.Errorf("IdempotencyKey() = %q, want %q (the pinned format)", got, pinned)
	}
	tests := []struct {
		name string
		k    ledger.Key
	}{
		{"other effect", ledger.Key{Tenant: "acme", Event: "acme#stripe#evt_1", Effect: "email"}},
		{"other event", ledger.Key{Tenant: "acme", Event: "acme#stripe#evt_2", Effect: "forward"}},
		{"other tenant", ledger.Key{Tenant: "acmf", Event: "acme#stripe#evt_1", Effect: "forward"}},
		{"shifted boundary", ledger.Key{Tenant: "acme", Event: "acme#stripe#evt_1f", Effect: "orward"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if k := tt.k.IdempotencyKey(); k == got {
				t.Errorf("IdempotencyKey(%+v) = %q, same as %+v", tt.k, k, base)
			}
		})
	}
}

func TestValidEffect(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"forward", true},
		{"crm.upsert:v2_A-1", true},
		{"", false},
		{"has space", false},
		{"pipe|d", false},
		{"x123456789x123456789x123456789x123456789x123456789x123456789x1234", false},
	}
	for _, tt := range tests {
		err := ledger.ValidEffect(tt.name)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ledger.ErrInvalidKey)) {
			t.Errorf("ValidEffect(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
