package ratelimit_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookpack/hookpack/pkg/internal/lease"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/ratelimit"
	"github.com/hookpack/hookpack/pkg/ratelimit/ratelimittest"
)

var (
	_ ratelimittest.Store = (*ratelimit.Memory)(nil)
	_ ratelimittest.Store = (*ratelimit.DynamoDB)(nil)
)

func TestMemoryContract(t *testing.T) {
	ratelimittest.Run(t, func(t *testing.T) func() ratelimittest.Store {
		m := ratelimit.NewMemory(ratelimittest.Options)
		return func() ratelimittest.Store { return m }
	})
}

func TestDynamoDBLocalContract(t *testing.T) {
	client := dynamodb.NewFromConfig(awstest.Config(t, awstest.DynamoDBLocal(t)))
	ratelimittest.Run(t, func(t *testing.T) func() ratelimittest.Store {
		table := ledgerTable(t, client)
		return func() ratelimittest.Store { return ratelimit.NewDynamoDB(client, table, ratelimittest.Options) }
	})
}

// ledgerTable creates a ledger table as template.yaml deploys it.
func ledgerTable(t testing.TB, client *dynamodb.Client) string {
	table := awstest.Name(t)
	if err := provision.Ledger(context.Background(), client, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return table
}

// counting counts the calls that reach the client, and fails every call
// with err when set.
type counting struct {
	next    *dynamodb.Client
	updates atomic.Int64
	gets    atomic.Int64
	err     error
}

func (c *counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	if c.err != nil {
		return nil, c.err
	}
	return c.next.UpdateItem(ctx, in, opts...)
}

func (c *counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	if c.err != nil {
		return nil, c.err
	}
	return c.next.GetItem(ctx, in, opts...)
}

func (c *counting) calls() int64 { return c.updates.Load() + c.gets.Load() }

var limit = ratelimit.Limit{Rate: 100, Burst: 10}

// TestUnlimitedMakesNoCall: no rate configured, no AWS call at all.
func TestUnlimitedMakesNoCall(t *testing.T) {
	c := &counting{err: errors.New("no call expected")}
	d := ratelimit.NewDynamoDB(c, "ledger", ratelimit.Options{})
	k, now := ratelimit.Key{Tenant: "acme", Name: "dest:example.com"}, time.Now()
	for _, l := range []ratelimit.Limit{{}, {Rate: 0, Burst: 5}, {Rate: -3}} {
		if r, err := d.Reserve(context.Background(), k, l, 10, time.Second, now); err != nil || len(r.Slots) != 10 {
			t.Errorf("Reserve(%+v) = %+v, %v; want 10 slots", l, r, err)
		}
		if _, err := d.Slow(context.Background(), k, l, time.Second, now); err != nil {
			t.Errorf("Slow(%+v) = %v", l, err)
		}
	}
	if n := c.calls(); n != 0 {
		t.Errorf("%d AWS calls for unlimited limits, want 0", n)
	}
}

// TestErrorsNameTheKeyOnce: an AWS error comes back wrapped once, with the
// key and nothing else of the request.
func TestErrorsNameTheKeyOnce(t *testing.T) {
	throttled := &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}
	d := ratelimit.NewDynamoDB(&counting{err: throttled}, "ledger", ratelimit.Options{})
	k, now := ratelimit.Key{Tenant: "acme", Name: "dest:example.com"}, time.Now()
	_, errR := d.Reserve(context.Background(), k, limit, 3, time.Second, now)
	_, errS := d.Slow(context.Background(), k, limit, 0, now)
	_, errG := d.State(context.Background(), k, now)
	for _, err := range []error{errR, errS, errG} {
		var pte *types.ProvisionedThroughputExceededException
		if !errors.As(err, &pte) || strings.Count(err.Error(), k.String()) != 1 {
			t.Errorf("error = %v, want the AWS error wrapped with %s once", err, k)
		}
	}
}

// TestContentionIsBounded: a write whose guess is always stale gives up
// after a bounded number of calls with ErrContention.
func TestContentionIsBounded(t *testing.T) {
	ccf := &types.ConditionalCheckFailedException{Message: aws.String("no"), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "limit#acme#dest:x"},
	}}
	c := &counting{err: ccf}
	d := ratelimit.NewDynamoDB(c, "ledger", ratelimit.Options{})
	_, err := d.Reserve(context.Background(), ratelimit.Key{Tenant: "acme", Name: "dest:x"}, limit, 3, time.Second, time.Now())
	if !errors.Is(err, ratelimit.ErrContention) || c.calls() != 10 {
		t.Errorf("Reserve() against a changing item = %v after %d calls, want ErrContention after 10", err, c.calls())
	}
}

// TestItemInTheLedgerTable: the item lives under limit#<tenant>#<name>
// with the table's TTL attribute in epoch seconds, and a warm store
// reserves with exactly one UpdateItem.
func TestItemInTheLedgerTable(t *testing.T) {
	client := dynamodb.NewFromConfig(awstest.Config(t, awstest.DynamoDBLocal(t)))
	table := ledgerTable(t, client)
	c := &counting{next: client}
	d := ratelimit.NewDynamoDB(c, table, ratelimittest.Options)
	k, now := ratelimit.Key{Tenant: "acme", Name: "dest:example.com"}, lease.NewClock().Now()
	for i := range 3 {
		before := c.calls()
		if _, err := d.Reserve(context.Background(), k, limit, 10, time.Second, now.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := c.calls() - before; got != 1 {
			t.Errorf("Reserve #%d made %d calls, want 1 UpdateItem", i+1, got)
		}
	}
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "limit#acme#dest:example.com"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	exp, ok := out.Item["expiration"].(*types.AttributeValueMemberN)
	if !ok || len(exp.Value) != len("1700000000") {
		t.Errorf("item = %v, want an expiration in epoch seconds", out.Item)
	}
}

func BenchmarkReserveMemory(b *testing.B) {
	m := ratelimit.NewMemory(ratelimit.Options{})
	k, now := ratelimit.Key{Tenant: "acme", Name: "dest:example.com"}, time.Now()
	for b.Loop() {
		now = now.Add(100 * time.Millisecond) // the 10 slots' time at 100/s
		if _, err := m.Reserve(context.Background(), k, limit, 10, time.Second, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReserveDynamoDB reserves a 10-message batch from containers
// (each its own store: its own memory of the item) taking turns on one
// limit of 100/s, at half the rate and at twice the rate (the horizon
// full: fewer slots than asked), and reports the DynamoDB calls and write
// units per reservation: 1 is the floor; a container whose memory went
// stale pays one failed write, a full horizon one read.
func BenchmarkReserveDynamoDB(b *testing.B) {
	client := dynamodb.NewFromConfig(awstest.Config(b, awstest.DynamoDBLocal(b)))
	for _, bb := range []struct {
		name       string
		containers int
		every      time.Duration // between two batches: 100 ms is the rate
	}{
		{"one-container/half-rate", 1, 200 * time.Millisecond},
		{"four-containers/half-rate", 4, 200 * time.Millisecond},
		{"four-containers/twice-rate", 4, 50 * time.Millisecond},
	} {
		b.Run(bb.name, func(b *testing.B) {
			table := ledgerTable(b, client)
			c := &counting{next: client}
			stores := make([]*ratelimit.DynamoDB, bb.containers)
			for i := range stores {
				stores[i] = ratelimit.NewDynamoDB(c, table, ratelimit.Options{})
			}
			k, now := ratelimit.Key{Tenant: "acme", Name: "dest:example.com"}, lease.NewClock().Now()
			i := 0
			for b.Loop() {
				now = now.Add(bb.every)
				if _, err := stores[i%bb.containers].Reserve(context.Background(), k, limit, 10, time.Second, now); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(c.calls())/float64(i), "calls/reserve")
			b.ReportMetric(float64(c.updates.Load())/float64(i), "WRU/reserve")
		})
	}
}

// BenchmarkBareUpdateItem is the baseline: the one UpdateItem a reservation
// makes, unconditional.
func BenchmarkBareUpdateItem(b *testing.B) {
	client := dynamodb.NewFromConfig(awstest.Config(b, awstest.DynamoDBLocal(b)))
	table := ledgerTable(b, client)
	for b.Loop() {
		_, err := client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
			TableName:                 aws.String(table),
			Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "limit#acme#dest:example.com"}},
			UpdateExpression:          aws.String("SET tat_us = :t"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberN{Value: "1"}},
			ReturnValues:              types.ReturnValueAllNew,
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// TestDynamoDBAgreesWithMemory drives the memory twin and DynamoDB Local
// (through three stores: three containers, each with its own, often
// stale, memory of the item) with one random sequence of reservations,
// 429s and reads at skewed clocks and changing rates: every answer must be
// the same.
func TestDynamoDBAgreesWithMemory(t *testing.T) {
	client := dynamodb.NewFromConfig(awstest.Config(t, awstest.DynamoDBLocal(t)))
	table := ledgerTable(t, client)
	m := ratelimit.NewMemory(ratelimittest.Options)
	var ds []*ratelimit.DynamoDB
	for range 3 {
		ds = append(ds, ratelimit.NewDynamoDB(client, table, ratelimittest.Options))
	}
	ctx, rnd := context.Background(), rand.New(rand.NewPCG(7, 7))
	keys := []ratelimit.Key{{Tenant: "acme", Name: "dest:a"}, {Tenant: "acme", Name: "orders"}}
	limits := []ratelimit.Limit{{Rate: 20, Burst: 3}, {Rate: 5, Burst: 1}, {Rate: 0.5, Burst: 2}}
	now := lease.NewClock().Now()
	for i := range 300 {
		now = now.Add(time.Duration(rnd.IntN(400)) * time.Millisecond)
		at := now.Add(-time.Duration(rnd.IntN(5)) * time.Millisecond) // another Lambda's clock
		k, l, d := keys[rnd.IntN(len(keys))], limits[rnd.IntN(len(limits))], ds[rnd.IntN(len(ds))]
		switch op := rnd.IntN(10); {
		case op < 7:
			n, wait := 1+rnd.IntN(10), time.Duration(rnd.IntN(3000))*time.Millisecond
			want, errM := m.Reserve(ctx, k, l, n, wait, at)
			got, errD := d.Reserve(ctx, k, l, n, wait, at)
			if errM != nil || errD != nil || !slices.EqualFunc(got.Slots, want.Slots, time.Time.Equal) || !got.Retry.Equal(want.Retry) {
				t.Fatalf("op %d: Reserve(%s, %+v, %d, %v) = %+v, %v; memory %+v, %v", i, k, l, n, wait, got, errD, want, errM)
			}
		case op < 9:
			retry := time.Duration(rnd.IntN(3)) * 700 * time.Millisecond
			want, errM := m.Slow(ctx, k, l, retry, at)
			got, errD := d.Slow(ctx, k, l, retry, at)
			if errM != nil || errD != nil || !got.Equal(want) {
				t.Fatalf("op %d: Slow(%s, %v) = %v, %v; memory %v, %v", i, k, retry, got, errD, want, errM)
			}
		default:
			want, errM := m.State(ctx, k, at)
			got, errD := d.State(ctx, k, at)
			if got != want || (errM == nil) != (errD == nil) {
				t.Fatalf("op %d: State(%s) = %+v, %v; memory %+v, %v", i, k, got, errD, want, errM)
			}
		}
	}
}
