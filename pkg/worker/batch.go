package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/envelope"
)

// tracker holds the results of one batch while its groups run. A group
// publishes each message's result when the message is finished; at the
// batch's cut-off Handle closes the tracker, and whatever a group still
// running (a straggler: an effect that ignores its context) publishes
// afterwards is discarded, so the batch's answer never waits for it.
type tracker struct {
	// begun is when Handle started the batch.
	begun    time.Time
	mu       sync.Mutex
	results  []result
	finished []bool
	started  []bool
	reserved []bool
	closed   bool
	// sending counts dead letters in flight: their messages' fate is
	// decided by the send, so close waits for them.
	sending sync.WaitGroup
}

func newTracker(begun time.Time, n int) *tracker {
	return &tracker{begun: begun, results: make([]result, n), finished: make([]bool, n), started: make([]bool, n), reserved: make([]bool, n)}
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
func (h *Handler) runGroup(ctx context.Context, t *tracker, recs []events.SQSMessage, group []int, workDeadline time.Time) {
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
		var r result
		switch {
		case expiring && blocker == nil && h.expiresBefore(rec, h.cfg.Now()):
			r = h.newResult(rec)
			r.env, _ = envelope.Decode([]byte(rec.Body))
			r.err = errEarlierExpiring
			r = h.expiring(ctx, t, i, rec, r)
		case blocker != nil:
			r = h.blocked(rec, blocker)
			if h.expiresBefore(rec, h.cfg.Now().Add(r.visibility)) {
				r = h.expiring(ctx, t, i, rec, r)
			}
		case !workDeadline.IsZero() && !h.cfg.Now().Before(workDeadline):
			r = h.expired(rec)
		default:
			r = h.process(ctx, t, i, rec, workDeadline)
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

// leaseEnd is when the effect leases of an invocation with this deadline
// end: they last as long as the invocation can, since a Lambda killed at
// its deadline holds nothing after it.
func leaseEnd(deadline time.Time) time.Time { return deadline.Add(time.Second) }

// errEarlierExpiring is why a message is dead-lettered without an attempt
// behind one that failed near the end of its retention.
var errEarlierExpiring = errors.New("an earlier message of its conversation failed this near the end of its retention, in this batch")

// leftBehind settles the messages the cut-off found unfinished: in each
// group, the one that was running is a failed attempt (counted, so an
// effect that hangs every time ends in the DLQ with a reason) and comes
// back once its effects' leases have ended; the ones after it wait with it.
func (h *Handler) leftBehind(ctx context.Context, recs []events.SQSMessage, grouped [][]int, results []result, finished, started []bool, deadline time.Time) {
	for _, group := range grouped {
		var blocker *result // the group's first failed message
		for _, i := range group {
			if finished[i] {
				if results[i].failed && blocker == nil {
					blocker = &results[i]
				}
				continue
			}
			rec := &recs[i]
			if blocker != nil || !started[i] {
				if blocker == nil {
					results[i] = h.expired(rec)
				} else {
					results[i] = h.blocked(rec, blocker)
				}
				continue
			}
			r := h.newResult(rec)
			r.env, _ = envelope.Decode([]byte(rec.Body))
			fctx, cancel := h.finish(ctx)
			n, cerr := h.cfg.Ledger.FailedAttempt(fctx, rec.MessageId, receivesOf(rec))
			cancel()
			if cerr == nil {
				r.attempt = n
			}
			// A retry before its effects' leases end would wait on them.
			lease := leaseEnd(deadline).Sub(h.cfg.Now())
			r = h.retry(r, RetryAfter(fmt.Errorf("%w: the message was still running at the invocation's cut-off", ErrTimedOut), lease))
			r.outcome = outTimedOut
			results[i] = r
			blocker = &results[i]
		}
	}
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

// blocked reports a message behind a failed one of its group: it waits as
// long as the failure does, so the group resumes in order.
func (h *Handler) blocked(rec *events.SQSMessage, blocker *result) result {
	r := h.newResult(rec)
	r.outcome, r.failed = outBlocked, true
	r.visibility, r.setVisibility = blocker.visibility, blocker.setVisibility
	r.env, _ = envelope.Decode([]byte(rec.Body))
	return r
}

// expired reports a message not started before the work deadline; it is
// made visible at once so the next invocation takes it.
func (h *Handler) expired(rec *events.SQSMessage) result {
	r := h.newResult(rec)
	r.outcome, r.failed, r.setVisibility = outDeadline, true, true
	r.env, _ = envelope.Decode([]byte(rec.Body))
	return r
}
