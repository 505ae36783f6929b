package worker_test

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// This file holds what the simulation models of time running out and of
// a queue created again, beyond simulation_test.go's draws: an AWS call
// made past its context's deadline, the promise of a message started with
// no time left, and the sender's retries that land in a re-created queue.

// expired reports whether ctx's deadline has passed on the simulation's
// clock: the SDK then fails the call before sending it. Only an
// invocation's deadline and those the worker derives from it (the work
// deadline its effects and reads run under) are on the simulation's clock
// (from simEpoch on); the worker's clean-up contexts end on real time
// (FinishTimeout), which no twin judges.
func (w *world) expired(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !d.Before(simEpoch) && !w.now.Before(d)
}

// errExpired is the answer to a call made past its context's deadline.
var errExpired = fmt.Errorf("simulated SDK refusal: %w", context.DeadlineExceeded)

// checkLate checks the promise of a message the worker takes up past its
// work deadline (every message of an invocation started with less time
// left than its safety margin): it is not started, so it costs no attempt
// and the next invocation takes it at once. Started anyway, its calls
// under the work deadline fail before they are sent (world.expired): an
// attempt charged to a message that never ran, and enough of them
// dead-letter it for failures it never had.
func (w *world) checkLate(fault string, msgs []*simMsg) {
	if fault != "late" || w.sess.crashed {
		return
	}
	for _, m := range msgs {
		if w.attempted[m.id] {
			w.violate("message %s of %s, taken up past the invocation's work deadline, was charged an attempt (outcome %q: %s)", m.id, eventName(m), w.outcomes[m.id], w.errs[m.id])
		}
	}
}

// senderRetries is the sender's answer to a queue created again (tenant.sh
// remove --force, then add): the deliveries it was answered 5xx for (the
// ingest's record lost) and still retries are delivered again, into the
// new queue, whose SequenceNumbers start again — while a message of the
// deleted queue that carried the same event may still be running. Each
// retry may meet an ingest fault of its own (world.senderFault).
func (w *world) senderRetries() {
	if !w.retryIntoNewQueue {
		return
	}
	var placed, others []*simEvent
	for _, e := range w.events {
		switch {
		case !w.retrying(e):
		case e.queued:
			placed = append(placed, e)
		default:
			others = append(others, e)
		}
	}
	// An event whose message of the deleted queue may still run keeps its
	// place (world.forgetPlaces): the retries arrive in the order of those
	// places, then the others', which take new ones.
	slices.SortStableFunc(placed, func(a, b *simEvent) int { return a.order - b.order })
	retried := append(placed, others...)
	for _, e := range retried {
		w.logf("    the sender retries %s into the new queue", e.id)
		f := ""
		if w.senderFault != nil {
			f = w.senderFault()
		}
		w.deliver(e, f)
	}
}

// retrying reports whether e's sender still retries it: its last
// delivery was not answered 2xx (an ingest fault before its record was
// done), and its retry horizon has not passed.
func (w *world) retrying(e *simEvent) bool {
	return e.claim != "done" && !e.first.IsZero() && w.now.Sub(e.first) <= retryHorizon
}

// unacknowledged returns the events their senders still retry.
func (w *world) unacknowledged() []*simEvent {
	return slices.DeleteFunc(slices.Clone(w.events), func(e *simEvent) bool { return !w.retrying(e) })
}

// retriesDue is the sender's own schedule, in a run whose ingest is flaky
// (world.onSchedule): each delivery it was not answered 2xx for is sent
// again once its backoff has passed (5 minutes, doubling, at most 12
// hours: past SQS's deduplication window, so each retry that gets through
// queues a copy), until its retry horizon. Each retry meets an ingest
// fault of its own (world.senderFault).
func (w *world) retriesDue() {
	if !w.onSchedule || w.senderFault == nil {
		return
	}
	for _, e := range w.events {
		if !w.retrying(e) {
			continue
		}
		if backoff := min(5*time.Minute<<min(e.tries-1, 10), 12*time.Hour); w.now.Before(e.lastTry.Add(backoff)) {
			continue
		}
		w.logf("    the sender retries %s on its schedule (delivery %d)", e.id, e.tries+1)
		w.deliver(e, w.senderFault())
	}
}
