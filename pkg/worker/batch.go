package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// tracker holds the results of one batch while its groups run. A group
// publishes each message's result when the message is finished; at the
// batch's cut-off Handle closes the tracker, and whatever a group still
// running (a straggler: an effect that ignores its context) publishes
// afterwards is discarded, so the batch's answer never waits for it.
type tracker struct {
	mu       sync.Mutex
	results  []result
	finished []bool
	started  []bool
	reserved []bool
	closed   bool
	// sending counts dead letters in flight: their messages' fate is
	// decided by the send, so close waits for them.
	sending sync.WaitGroup
	// newest is the latest SentTimestamp of the batch's messages (zero when
	// none has one): every one of them was sent by then (see incarnation).
	newest time.Time
}

func newTracker(records []events.SQSMessage) *tracker {
	n := len(records)
	t := &tracker{results: make([]result, n), finished: make([]bool, n), started: make([]bool, n), reserved: make([]bool, n)}
	for i := range records {
		if at, ok := sentAt(&records[i]); ok && at.After(t.newest) {
			t.newest = at
		}
	}
	return t
}

// start marks message i started; it reports false once the batch closed
// (the straggling group stops there).
func (t *tracker) start(i int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.started[i] = true
	return true
}

// open reports whether the batch still takes results.
func (t *tracker) open() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.closed
}

// reserve lets message i send its dead letter: false once the batch
// closed (the message is then reported failed, and must not also reach
// the DLQ). A reserved message's result is taken even after closing, and
// close waits for it.
func (t *tracker) reserve(i int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.reserved[i] {
		return false
	}
	t.reserved[i] = true
	t.sending.Add(1)
	return true
}

// publish records message i's result. It reports false when the batch
// closed before and i was not reserved.
func (t *tracker) publish(i int, r result) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reserved[i] {
		defer t.sending.Done()
	} else if t.closed {
		return false
	}
	t.results[i], t.finished[i] = r, true
	return true
}

// close stops taking results and returns them, after any dead letter in
// flight settled; unfinished reports the messages that have none: started
// ones are the stragglers, the others never started.
func (t *tracker) close() (results []result, finished, started []bool) {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.sending.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.results, t.finished, t.started
}

// runGroup processes one conversation's messages in order: a message
// behind a failed one waits with it; one not started before the work
// deadline is handed to the next invocation; one near the end of its
// queue retention is dead-lettered rather than left to expire.
func (h *Handler) runGroup(ctx context.Context, t *tracker, recs []events.SQSMessage, group []int, b budget) {
	var blocker *result
	// expiring: an earlier message of the group failed again this near its
	// retention's end. The ones after it that are as near are dead-lettered
	// without an attempt, so a backlog behind a failing target drains at a
	// batch per invocation instead of a target call (and its timeout) each.
	expiring := false
	for _, i := range group {
		if !t.start(i) {
			return
		}
		rec := &recs[i]
		f := h.facts(rec, nil, nil)
		f.pending, f.earlierExpiring = true, expiring
		f.noTime = b.limited() && !f.now.Before(b.work)
		if blocker != nil {
			f.blocked, f.blockedDelay, f.blockedSet, f.blockedByCopy = true, blocker.visibility, blocker.setVisibility, blocker.heldByCopy
		}
		var r result
		if d := decide(f); d.verdict == vRun {
			r = h.process(ctx, t, i, rec, b)
		} else {
			m := h.newMessage(t, i, rec)
			h.readNow(ctx, m)
			if blocker != nil {
				m.r.heldFrom = blocker.seq
			}
			r = h.act(ctx, m, d)
		}
		if !t.publish(i, r) {
			return
		}
		if r.failed && blocker == nil {
			blocker = &r
		}
		if r.outcome == outDeadLettered && errors.Is(r.err, ErrExpiring) {
			expiring = true
		}
	}
}

// errEarlierExpiring is why a message is dead-lettered without an attempt
// behind one that failed near the end of its retention.
var errEarlierExpiring = errors.New("an earlier message of its conversation failed this near the end of its retention, in this batch")

// leftBehind settles the messages the cut-off found unfinished: in each
// group, the one that was running is a failed attempt (counted, so an
// effect that hangs every time ends in the DLQ with a reason) and comes
// back once its effects' leases have ended; the ones after it wait with it.
// The counts run side by side, each bounded by the answer's time: however
// many groups are stuck and however slow the ledger, the batch answers
// before the deadline (an uncounted attempt is counted by the next
// receive's takeover of the interrupted effect).
func (h *Handler) leftBehind(ctx context.Context, recs []events.SQSMessage, grouped [][]int, results []result, finished, started []bool, b budget) {
	bctx, cancel := h.bookkeeping(ctx, b)
	defer cancel()
	var wg sync.WaitGroup
	for _, group := range grouped {
		var blocker *result // the group's first failed message
		var waiting []int   // behind the running one
		running := -1
		for _, i := range group {
			switch {
			case finished[i]:
				if results[i].failed && blocker == nil {
					blocker = &results[i]
				}
			case blocker == nil && running < 0 && !started[i]:
				f := h.facts(&recs[i], nil, nil)
				f.pending, f.noTime = true, true
				results[i] = h.settled(bctx, &recs[i], f)
			case blocker == nil && running < 0:
				running = i
			default:
				waiting = append(waiting, i)
			}
		}
		wait := func(blocker *result) {
			for _, i := range waiting {
				f := h.facts(&recs[i], nil, nil)
				f.pending, f.blocked, f.blockedDelay, f.blockedSet, f.blockedByCopy = true, true, blocker.visibility, blocker.setVisibility, blocker.heldByCopy
				results[i] = h.settled(bctx, &recs[i], f)
			}
		}
		if running < 0 {
			if blocker != nil {
				wait(blocker)
			}
			continue
		}
		wg.Go(func() {
			rec := &recs[running]
			f := h.facts(rec, nil, nil)
			f.timedOut, f.counted, f.leaseLeft = true, true, b.leaseEnd.Sub(h.cfg.Now())
			f.attempt, f.countErr = h.cfg.Ledger.FailedAttempt(bctx, rec.MessageId, receivesOf(rec))
			results[running] = h.settled(bctx, rec, f)
			if f.countErr == nil {
				results[running].attempt = f.attempt
			}
			wait(&results[running])
		})
	}
	wg.Wait()
}

// settled is the result of a message the cut-off decided on without
// running it: never a dead letter (the batch is closed), only a failure
// with its visibility.
func (h *Handler) settled(ctx context.Context, rec *events.SQSMessage, f facts) result {
	d := decide(f)
	if d.verdict == vDeadLetter {
		// Near its retention's end: the next invocation dead-letters it.
		d = fate{verdict: vAgain, outcome: outDeadline, err: d.err}
	}
	m := h.newMessage(nil, 0, rec)
	h.readNow(ctx, m)
	return h.act(ctx, m, d)
}

// groups returns the record indices per message group, groups in order of
// first appearance, records in batch order (SQS FIFO's order). Records
// without a group (standard queues) are each their own group.
func groups(recs []events.SQSMessage) [][]int {
	var out [][]int
	index := map[string]int{}
	for i, r := range recs {
		g, ok := r.Attributes["MessageGroupId"]
		if !ok || g == "" {
			out = append(out, []int{i})
			continue
		}
		j, seen := index[g]
		if !seen {
			j = len(out)
			index[g] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], i)
	}
	return out
}
