package chaos

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The sender is closed-loop: a conversation's next event waits while its
// tenant's queue holds more than the gate's bound of visible messages —
// those waiting for a poller; a message waiting on purpose (paused, rated,
// retrying) is in flight, not counted. An open-loop sender outran the
// pipeline: at 10,000 deliveries it sent 60 requests a second while the
// workers applied 10–20 effects, every latency grew with the backlog, and
// a latency measured there measured the machine. destTenant is not gated:
// its events go out at destSendRate, the same offered load in both
// phases. Gated, the followers its unwell destinations hold behind a
// waiting head (visible, though no poller can take them: their group is
// locked) would slow its sender in the faulty phase only, and after it
// they held its gate shut: 50 visible, 30 in flight, nothing applied for
// over 3 minutes (make chaos, seed 952337). A delivery waits at most
// gateMaxWait, so that no tenant's sender stops for good on followers
// held that way.
const (
	// backlogBatches is the bound in batches per poller: every poller's
	// receive finds a full batch (10 messages), and a message waits about
	// one invocation behind the one taking it.
	backlogBatches = 1
	// backlogEvery is how often the gate reads the queues.
	backlogEvery = 250 * time.Millisecond
	// gateMaxWait is the longest a delivery waits at the gate.
	gateMaxWait = 30 * time.Second
	batchSize   = 10
)

// gate admits each tenant's next delivery while its queue's visible
// backlog is at most bound: every reading (read) gives a tenant a budget
// of bound less its backlog, each admitted delivery takes one, and a
// delivery finding none waits for the next reading — so the deliveries a
// reading lets through cannot overshoot the bound by more than those the
// ingest has not yet queued. It reads with the harness's own SQS client:
// its requests are not the pack's, and are not checked against the roles.
// Safe for concurrent use.
type gate struct {
	client attributesAPI
	bound  int
	// maxWait bounds a wait (0: none); now is the clock it is read on.
	maxWait time.Duration
	now     func() time.Time
	// queues are the queues read, by tenant.
	queues map[string]string

	mu     sync.Mutex
	cond   *sync.Cond
	budget map[string]int
	most   map[string]int // the highest backlog read, per tenant
	last   map[string]int // the last backlog read, per tenant
	closed bool
}

func newGate(client attributesAPI, bound int, queues map[string]string) *gate {
	g := &gate{client: client, bound: bound, maxWait: gateMaxWait, now: time.Now, queues: queues, budget: map[string]int{}, most: map[string]int{}, last: map[string]int{}}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// run reads the queues every backlogEvery until ctx ends, then lets every
// waiting delivery through.
func (g *gate) run(ctx context.Context) {
	for ctx.Err() == nil {
		g.read(ctx)
		sleep(ctx, backlogEvery)
	}
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cond.Broadcast()
}

// read reads every queue's visible backlog once and refills the budgets.
// A queue that cannot be read keeps its budget until the next reading.
func (g *gate) read(ctx context.Context) {
	for id, url := range g.queues {
		out, err := g.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
		})
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
		if err != nil {
			continue
		}
		g.mu.Lock()
		g.budget[id] = max(0, g.bound-n)
		g.most[id] = max(g.most[id], n)
		g.last[id] = n
		g.mu.Unlock()
	}
	g.cond.Broadcast()
}

// admit takes one of tenant's budget, and reports whether there was one.
func (g *gate) admit(tenant string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.admitLocked(tenant)
}

func (g *gate) admitLocked(tenant string) bool {
	if g.closed {
		return true
	}
	if g.budget[tenant] > 0 {
		g.budget[tenant]--
		return true
	}
	return false
}

// wait returns once tenant's next delivery is admitted, the gate closed
// (its run ended), or maxWait passed (looked at on each reading).
func (g *gate) wait(tenant string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	start := g.now()
	for !g.admitLocked(tenant) {
		if g.maxWait > 0 && g.now().Sub(start) >= g.maxWait {
			return
		}
		g.cond.Wait()
	}
}

// readings returns the highest and the last backlog read of each
// tenant's queue.
func (g *gate) readings() (most, last map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.most), maps.Clone(g.last)
}
