package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookpack/hookpack/pkg/awstest"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/ledger/ledgertest"
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
	runDynamo(t, awstest.Moto(t), ledgertest.Quirks{NonAtomicConcurrentTransactions: true})
}

func runDynamo(t *testing.T, endpoint string, q ledgertest.Quirks) {
	client := dynamodb.NewFromConfig(awstest.Config(t, endpoint))
	ledgertest.Run(t, func(t *testing.T, c *ledgertest.Clock) ledgertest.Store {
		table := awstest.Name(t)
		if err := ledger.CreateTable(context.Background(), client, table); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		return ledger.NewDynamoDB(client, table, opts(c))
	}, q)
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
