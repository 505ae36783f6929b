package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/provision"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

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
	cfg := awstest.Config(t, endpoint)
	ledgertest.Run(t, func(t *testing.T, c *ledgertest.Clock) ledgertest.Store {
		lost := &awstest.LostAnswers{}
		client := dynamodb.NewFromConfig(lost.Install(cfg))
		table := awstest.Name(t)
		if err := provision.Ledger(context.Background(), client, table); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		t.Cleanup(func() {
			if n := lost.Pending(); n > 0 {
				t.Errorf("%d answers to lose were never lost: the case did not test what it meant to", n)
			}
		})
		return lossyDynamoDB{ledger.NewDynamoDB(client, table, opts(c)), lost}
	}, q)
}

// lossyDynamoDB is the DynamoDB ledger on a client that loses answers
// when told to (LoseAnswers, LoseEveryAnswer: of its next n requests).
type lossyDynamoDB struct {
	*ledger.DynamoDB
	lost *awstest.LostAnswers
}

func (s lossyDynamoDB) LoseAnswers(n int)     { s.lost.Lose(n) }
func (s lossyDynamoDB) LoseEveryAnswer(n int) { s.lost.LoseEvery(n) }

// TestFenceTokenOrder: tokens order messages by SequenceNumber as numbers
// (SQS's are 128-bit decimals of varying length) and deliveries of one
// message by receive count, so DynamoDB can compare them as strings.
func TestFenceTokenOrder(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi [2]any // sequence, attempt
	}{
		{"later message", [2]any{"18849496460467696128", 9}, [2]any{"18849496460467696129", 1}},
		{"longer sequence number", [2]any{"9", 2}, [2]any{"10", 1}},
		{"later delivery of one message", [2]any{"18849496460467696128", 1}, [2]any{"18849496460467696128", 2}},
		{"receive counts past 9", [2]any{"5", 9}, [2]any{"5", 10}},
		{"128-bit sequence number", [2]any{"340282366920938463463374607431768211454", 1}, [2]any{"340282366920938463463374607431768211455", 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, err := ledger.NewFence("acme", "c", tt.lo[0].(string), tt.lo[1].(int), false)
			if err != nil {
				t.Fatal(err)
			}
			hi, err := ledger.NewFence("acme", "c", tt.hi[0].(string), tt.hi[1].(int), false)
			if err != nil {
				t.Fatal(err)
			}
			if got := ledger.TokenReceive(hi.Token()); got != tt.hi[1].(int) {
				t.Errorf("TokenReceive(%s) = %d, want %d", hi.Token(), got, tt.hi[1])
			}
			if !(lo.Token() < hi.Token()) || len(lo.Token()) != len(hi.Token()) {
				t.Errorf("Token(%v) = %s, Token(%v) = %s; want the first below, same width", tt.lo, lo.Token(), tt.hi, hi.Token())
			}
		})
	}
	for _, bad := range []struct {
		seq     string
		attempt int
	}{{"", 1}, {"12a", 1}, {"-1", 1}, {"1", 0}, {"12345678901234567890123456789012345678901", 1}} {
		if _, err := ledger.NewFence("acme", "c", bad.seq, bad.attempt, false); !errors.Is(err, ledger.ErrInvalidKey) {
			t.Errorf("NewFence(%q, %d) = %v, want ErrInvalidKey", bad.seq, bad.attempt, err)
		}
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
