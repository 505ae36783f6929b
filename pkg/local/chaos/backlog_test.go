package chaos

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// fakeBacklog answers GetQueueAttributes with a settable visible backlog
// per queue URL; a URL without one fails.
type fakeBacklog struct {
	mu      sync.Mutex
	visible map[string]int
}

func (f *fakeBacklog) set(url string, n int) {
	f.mu.Lock()
	f.visible[url] = n
	f.mu.Unlock()
}

func (f *fakeBacklog) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.visible[aws.ToString(in.QueueUrl)]
	if !ok {
		return nil, errors.New("queue does not exist")
	}
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{string(types.QueueAttributeNameApproximateNumberOfMessages): strconv.Itoa(n)}}, nil
}

// admitted counts how many of tenant's deliveries the gate admits now,
// up to limit.
func admitted(g *gate, tenant string, limit int) int {
	n := 0
	for n < limit && g.admit(tenant) {
		n++
	}
	return n
}

// TestGateAdmitsBelowTheBound: each reading lets a tenant start the bound
// less its visible backlog, none while its backlog is at or over the
// bound; one tenant's backlog holds back no other; a queue that cannot be
// read keeps its budget.
func TestGateAdmitsBelowTheBound(t *testing.T) {
	ctx := context.Background()
	fake := &fakeBacklog{visible: map[string]int{"q-alpha": 80, "q-beta": 10}}
	g := newGate(fake, 50, map[string]string{"alpha": "q-alpha", "beta": "q-beta", "gamma": "q-gamma"})
	if n := admitted(g, "alpha", 100); n != 0 {
		t.Errorf("before any reading: alpha admitted %d, want 0", n)
	}
	g.read(ctx)
	for _, tt := range []struct {
		tenant string
		want   int
	}{
		{"alpha", 0}, // 80 visible, over 50
		{"beta", 40}, // 10 visible: 40 more
		{"gamma", 0}, // never read
	} {
		if n := admitted(g, tt.tenant, 100); n != tt.want {
			t.Errorf("after reading %v: %s admitted %d, want %d", fake.visible, tt.tenant, n, tt.want)
		}
	}
	fake.set("q-alpha", 50)
	g.read(ctx)
	g.read(ctx) // two readings before beta sends: its budget is set, not added to
	if n := admitted(g, "alpha", 100); n != 0 {
		t.Errorf("alpha at the bound (50 visible): admitted %d, want 0", n)
	}
	if n := admitted(g, "beta", 100); n != 40 {
		t.Errorf("beta 10 visible again: admitted %d, want 40 (the budget refilled, not added to)", n)
	}
	fake.set("q-alpha", 47)
	delete(fake.visible, "q-beta")
	g.read(ctx)
	if n := admitted(g, "alpha", 100); n != 3 {
		t.Errorf("alpha 47 visible: admitted %d, want 3", n)
	}
	if n := admitted(g, "beta", 100); n != 0 {
		t.Errorf("beta unreadable after its budget was spent: admitted %d, want 0", n)
	}
	most, last := g.readings()
	if most["alpha"] != 80 || last["alpha"] != 47 || most["beta"] != 10 {
		t.Errorf("readings() = most %v, last %v; want alpha 80 and 47, beta 10", most, last)
	}
}

// TestGateWaitsUntilTheBacklogFalls: a waiting delivery stays held while
// readings find the backlog over the bound, goes on the first reading
// below it, and every waiter goes once the gate closes.
func TestGateWaitsUntilTheBacklogFalls(t *testing.T) {
	fake := &fakeBacklog{visible: map[string]int{"q-alpha": 60}}
	g := newGate(fake, 50, map[string]string{"alpha": "q-alpha"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		g.wait("alpha")
		close(done)
	}()
	for range 3 {
		g.read(ctx)
		select {
		case <-done:
			t.Fatal("wait returned while alpha's backlog (60) was over the bound (50)")
		default:
		}
	}
	fake.set("q-alpha", 49)
	g.read(ctx)
	<-done // admitted: one message under the bound

	held := make(chan struct{})
	go func() {
		g.wait("alpha") // the budget (1) was spent: held until a reading or the close
		close(held)
	}()
	cancel()
	g.run(ctx) // ends at once: closes the gate
	<-held
}

// TestGateWaitsAtMostMaxWait: a delivery held by a backlog that never
// falls (followers a waiting head holds are visible) goes after maxWait.
func TestGateWaitsAtMostMaxWait(t *testing.T) {
	fake := &fakeBacklog{visible: map[string]int{"q-alpha": 60}}
	g := newGate(fake, 50, map[string]string{"alpha": "q-alpha"})
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	started := make(chan struct{})
	var once sync.Once
	g.now = func() time.Time {
		once.Do(func() { close(started) }) // the wait read its start
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	done := make(chan struct{})
	go func() {
		g.wait("alpha")
		close(done)
	}()
	<-started
	ctx := context.Background()
	for range 3 {
		mu.Lock()
		now = now.Add(g.maxWait / 4)
		mu.Unlock()
		g.read(ctx)
		select {
		case <-done:
			t.Fatalf("wait returned before maxWait (%v) passed", g.maxWait)
		default:
		}
	}
	mu.Lock()
	now = now.Add(g.maxWait)
	mu.Unlock()
	for {
		g.read(ctx) // the waiter looks at the clock on each reading
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
