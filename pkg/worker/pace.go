package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/ratelimit"
	"github.com/hookpack/hookpack/pkg/route"
)

// limiter grants rate slots of a tenant's limit across every invocation
// (ratelimit.DynamoDB; see package ratelimit for the semantics).
type limiter interface {
	Reserve(ctx context.Context, k ratelimit.Key, l ratelimit.Limit, n int, maxWait time.Duration, now time.Time) (ratelimit.Reservation, error)
	Slow(ctx context.Context, k ratelimit.Key, l ratelimit.Limit, retryAfter time.Duration, now time.Time) (time.Time, error)
}

// MaxSlotWait is the longest a message sleeps inside an invocation for a
// rate slot. A batch answers when its slowest conversation is done, so a
// longer sleep would hold every other destination's messages of the batch
// (and the poller that received it) behind one destination's rate. A slot
// further away is not reserved: the message waits in the queue (outcome
// paced, visible again when the limit can grant its slot within
// MaxSlotWait), which is no attempt.
const MaxSlotWait = time.Second

// pacer hands a limit's slots to the messages of one invocation. The first
// message that needs a slot of a limit reserves one for every message of
// the batch that may need it (demand), all within MaxSlotWait and the
// invocation's working time: one write per invocation and limit, never one
// per message. The others take from what it got; a message left without a
// slot waits for the limit outside the invocation (ErrPaced: not an
// attempt), and so does one whose slot came after a 429 paused the limit.
type pacer struct {
	lim  limiter
	now  func() time.Time
	wait func(ctx context.Context, until time.Time) bool
	// work is when every effect must have ended (zero: no deadline).
	work time.Time
	recs []events.SQSMessage

	// mu guards pools; held across a reservation and a 429's Slow, so a
	// message that wakes for its slot meanwhile sees the pause.
	mu    sync.Mutex
	pools map[ratelimit.Key]*pool
	// routed are recs as filters see them (an entry nil: unreadable
	// here), decoded once, under routedMu.
	routedMu sync.Mutex
	routed   []*route.Event
}

// pool is what one limit granted this invocation.
type pool struct {
	slots []time.Time // unused, earliest first
	// retry is when the limit may grant again (zero: it granted all asked
	// for); paused is set by a 429 until then.
	retry  time.Time
	paused bool
	asked  bool
	used   int // slots taken
}

// slotGrace is how late a slot may still be used. The limiter counted
// each slot at its time; one used later (its message's turn came late: an
// earlier message of its conversation took long, or the invocation
// stalled) lands in a window whose slots the limiter has granted again
// since, and the destination sees more than burst + rate × t. A sleep
// wakes within milliseconds of its slot.
const slotGrace = 100 * time.Millisecond

// dropStale drops the slots whose time passed more than slotGrace before
// now; when it leaves none, the next message reserves again (for the
// messages that took none yet).
func (pl *pool) dropStale(now time.Time) {
	n := len(pl.slots)
	for len(pl.slots) > 0 && now.Sub(pl.slots[0]) > slotGrace {
		pl.slots = pl.slots[1:]
	}
	if n > 0 && len(pl.slots) == 0 {
		pl.asked = false
	}
}

// newPacer returns the pacer of an invocation of recs with budget b.
func (h *Handler) newPacer(recs []events.SQSMessage, b budget) *pacer {
	return &pacer{lim: h.cfg.Limiter, now: h.cfg.Now, wait: h.cfg.Wait, work: b.work, recs: recs, pools: map[ratelimit.Key]*pool{}}
}

// demand counts the messages of the invocation that may need a slot: those
// whose event sel selects, and those whose body cannot be read here (an
// offloaded one: counted, as it may be selected).
func (p *pacer) demand(sel func(*route.Event) bool) int {
	p.routedMu.Lock()
	defer p.routedMu.Unlock()
	if p.routed == nil {
		p.routed = make([]*route.Event, len(p.recs))
		for i := range p.recs {
			if queue.IsPointer(p.recs[i].Body) {
				continue
			}
			if env, err := envelope.Decode([]byte(p.recs[i].Body)); err == nil {
				body, _ := env.RawBody()
				p.routed[i] = route.NewEvent(env.Provider, env.Type, body)
			}
		}
	}
	n := 0
	for _, re := range p.routed {
		if re == nil || sel(re) {
			n++
		}
	}
	return max(n, 1)
}

// take waits for a slot of limit k (reserving demand slots for the
// invocation on its first call), budget being what the effect needs after
// it. It returns nil when the slot came, or an error wrapping ErrPaced and
// carrying RetryAfter when none fits within MaxSlotWait and before the work
// deadline, or a 429 paused the limit (before or while it slept); a failed
// reservation is a transient error.
func (p *pacer) take(ctx context.Context, k ratelimit.Key, l ratelimit.Limit, budget time.Duration, demand func() int) error {
	if l.Unlimited() {
		return nil
	}
	p.mu.Lock()
	pl := p.pool(k)
	pl.dropStale(p.now())
	if !pl.asked && !pl.paused {
		pl.asked = true
		now := p.now()
		maxWait := time.Duration(0)
		if !p.work.IsZero() {
			maxWait = min(MaxSlotWait, max(0, p.work.Sub(now)-budget))
		}
		n := max(demand()-pl.used, 1)
		res, err := p.lim.Reserve(ctx, k, l, n, maxWait, now)
		if err != nil {
			pl.asked = false // the next message asks again
			p.mu.Unlock()
			if errors.Is(err, ratelimit.ErrContention) {
				return RetryAfter(fmt.Errorf("%w: limit %s: %w", ErrPaced, k.Name, err), time.Second)
			}
			return fmt.Errorf("rate limit %s: %w", k.Name, err)
		}
		pl.slots, pl.retry = res.Slots, res.Retry
	}
	if len(pl.slots) == 0 {
		retry := pl.retry
		p.mu.Unlock()
		wait := max(retry.Sub(p.now()), time.Second)
		return RetryAfter(fmt.Errorf("%w: limit %s has no slot this invocation may wait for", ErrPaced, k.Name), wait)
	}
	at := pl.slots[0]
	pl.slots, pl.used = pl.slots[1:], pl.used+1
	p.mu.Unlock()
	if !p.wait(ctx, at) {
		return RetryAfter(fmt.Errorf("%w: limit %s: %w", ErrPaced, k.Name, ctx.Err()), time.Second)
	}
	p.mu.Lock()
	paused, retry := pl.paused, pl.retry
	p.mu.Unlock()
	if paused {
		// A 429 while it slept: its slot was granted before the pause, and
		// the target would refuse it too.
		return RetryAfter(fmt.Errorf("%w: limit %s paused by a 429 until %s", ErrPaced, k.Name, retry.UTC().Format(time.RFC3339)),
			max(retry.Sub(p.now()), time.Second))
	}
	return nil
}

// slow reports a 429 of limit k's target: every invocation's later slots
// come after the pause (ratelimit Slow), and this invocation's unused ones
// are dropped. It returns the pause's end.
func (p *pacer) slow(ctx context.Context, k ratelimit.Key, l ratelimit.Limit, retryAfter time.Duration) (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until, err := p.lim.Slow(ctx, k, l, retryAfter, p.now())
	pl := p.pool(k)
	pl.slots, pl.paused, pl.asked = nil, true, true
	if err != nil {
		until = p.now().Add(max(retryAfter, time.Second))
	}
	pl.retry = until
	return until, err
}

// pool returns limit k's pool of this invocation, created empty. The
// caller holds p.mu.
func (p *pacer) pool(k ratelimit.Key) *pool {
	pl := p.pools[k]
	if pl == nil {
		pl = &pool{}
		p.pools[k] = pl
	}
	return pl
}
