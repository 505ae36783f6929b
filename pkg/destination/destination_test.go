package destination_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/destination/destinationtest"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/provision"
)

var (
	_ destinationtest.Store = (*destination.Memory)(nil)
	_ destinationtest.Store = (*destination.DynamoDB)(nil)
)

func TestMemoryContract(t *testing.T) {
	destinationtest.Run(t, func(t *testing.T) func() destinationtest.Store {
		m := destination.NewMemory()
		return func() destinationtest.Store { return m }
	})
}

func TestDynamoDBLocalContract(t *testing.T) {
	runDynamo(t, awstest.DynamoDBLocal(t))
}

func TestMotoContract(t *testing.T) {
	runDynamo(t, awstest.Moto(t))
}

func runDynamo(t *testing.T, endpoint string) {
	client := dynamodb.NewFromConfig(awstest.Config(t, endpoint))
	destinationtest.Run(t, func(t *testing.T) func() destinationtest.Store {
		table := ledgerTable(t, client)
		return func() destinationtest.Store { return destination.NewDynamoDB(client, table) }
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

// counting counts the calls that reach DynamoDB.
type counting struct {
	next                  *dynamodb.Client
	gets, updates, delete atomic.Int64
}

func (c *counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	return c.next.GetItem(ctx, in, opts...)
}

func (c *counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	return c.next.UpdateItem(ctx, in, opts...)
}

func (c *counting) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.delete.Add(1)
	return c.next.DeleteItem(ctx, in, opts...)
}

// TestWritesOnlyOnChange: a healthy delivery and a failure inside a
// streak write nothing; the streak's start, the auto-pause and the first
// success after failures write once each; States is one eventually
// consistent read.
func TestWritesOnlyOnChange(t *testing.T) {
	ctx := context.Background()
	client := &counting{next: dynamodb.NewFromConfig(awstest.Config(t, awstest.DynamoDBLocal(t)))}
	s := destination.NewDynamoDB(client, ledgerTable(t, client.next))
	t0, after := time.Now().UTC().Truncate(time.Millisecond), time.Hour
	var st destination.State
	step := func(name string, f func() (destination.State, error), updates int64) {
		t.Helper()
		before := client.updates.Load()
		var err error
		if st, err = f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := client.updates.Load() - before; got != updates {
			t.Errorf("%s made %d UpdateItem calls, want %d", name, got, updates)
		}
	}
	step("a healthy delivery", func() (destination.State, error) { return s.Recovered(ctx, "acme", "billing", t0, st) }, 0)
	step("the first failure", func() (destination.State, error) { return s.Failed(ctx, "acme", "billing", "503", t0, after, st) }, 1)
	step("a failure in the streak", func() (destination.State, error) {
		return s.Failed(ctx, "acme", "billing", "503", t0.Add(time.Minute), after, st)
	}, 0)
	step("the first success", func() (destination.State, error) {
		return s.Recovered(ctx, "acme", "billing", t0.Add(2*time.Minute), st)
	}, 1)
	step("the next success", func() (destination.State, error) {
		return s.Recovered(ctx, "acme", "billing", t0.Add(3*time.Minute), st)
	}, 0)
	if client.gets.Load() != 0 {
		t.Errorf("%d GetItem calls, want none: every write returns the item", client.gets.Load())
	}
	if _, err := s.States(ctx, "acme"); err != nil || client.gets.Load() != 1 {
		t.Errorf("States() = %v after %d GetItem calls, want one", err, client.gets.Load())
	}
}

func TestPoll(t *testing.T) {
	for _, tt := range []struct{ pausedFor, want time.Duration }{
		{0, time.Minute},
		{5 * time.Minute, time.Minute},
		{time.Hour, 6 * time.Minute},
		{24 * time.Hour, 144 * time.Minute},
		{30 * 24 * time.Hour, 12 * time.Hour},
	} {
		if got := destination.Poll(tt.pausedFor); got != tt.want {
			t.Errorf("Poll(%s) = %s, want %s", tt.pausedFor, got, tt.want)
		}
	}
	// A pause of 12 days (the queue's retention less the worker's expiry
	// margin) costs a waiting message well under the queue's default 280 receives.
	receives, at := 0, time.Duration(0)
	for at < 12*24*time.Hour {
		at += destination.Poll(at)
		receives++
	}
	if receives > 100 {
		t.Errorf("a 12-day pause takes %d receives, want at most 100", receives)
	}
}

func TestCache(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	m := destination.NewMemory()
	reads := &countingStates{Memory: m}
	c := destination.NewCache(reads, 10*time.Second, func() time.Time { return now })
	if _, err := m.Pause(ctx, "acme", "billing", "maintenance", now); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got, err := c.States(ctx, "acme"); err != nil || !got["billing"].IsPaused() {
			t.Fatalf("States() = %+v, %v; want billing paused", got, err)
		}
	}
	if reads.n != 1 {
		t.Errorf("3 States() within the TTL read %d times, want 1", reads.n)
	}
	if _, err := m.Resume(ctx, "acme", "billing"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(9 * time.Second)
	if got, _ := c.States(ctx, "acme"); !got["billing"].IsPaused() {
		t.Errorf("States() within the TTL after a resume elsewhere = %+v, want the cached pause", got)
	}
	now = now.Add(time.Second)
	if got, _ := c.States(ctx, "acme"); got["billing"].IsPaused() || reads.n != 2 {
		t.Errorf("States() at the TTL = %+v after %d reads, want the resume read (2 reads)", got, reads.n)
	}
	// Its own writes replace the cached state.
	st, err := c.Failed(ctx, "acme", "crm", "503", now, time.Hour, destination.State{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.States(ctx, "acme"); got["crm"] != st || reads.n != 2 {
		t.Errorf("States() after Failed = %+v (%d reads), want crm %+v from the cache", got, reads.n, st)
	}
	if _, err := c.Recovered(ctx, "acme", "crm", now, st); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.States(ctx, "acme"); got["crm"].IsFailing() {
		t.Errorf("States() after Recovered = %+v, want crm not failing", got)
	}
}

type countingStates struct {
	*destination.Memory
	n int
}

func (c *countingStates) States(ctx context.Context, id string) (destination.States, error) {
	c.n++
	return c.Memory.States(ctx, id)
}
