package worker

import (
	"context"
	"time"
)

// budget is one invocation's time, computed once in Handle from the
// invocation's deadline: every instant the worker acts by. Without a
// deadline (a local poller) nothing is limited and only start is set.
type budget struct {
	start time.Time
	// deadline is when Lambda ends the invocation.
	deadline time.Time
	// work is when every effect must have ended (deadline less
	// Config.SafetyMargin); an effect starts only with its budget, or half
	// the window, left before it.
	work time.Time
	// cutoff is when Handle stops waiting for its groups and settles what
	// is still running.
	cutoff time.Time
	// answer is when every call Handle makes itself must have ended, so
	// that the batch's answer leaves before the deadline.
	answer time.Time
	// leaseEnd is when the effect leases of this invocation end: a Lambda
	// killed at its deadline holds nothing after it.
	leaseEnd time.Time
	// pace hands out the invocation's rate slots (Handle sets it).
	pace *pacer
	// pauses reads each tenant's destination states once (Handle sets it).
	pauses *pauses
}

// newBudget computes the budget of an invocation whose context is ctx.
func (h *Handler) newBudget(ctx context.Context) budget {
	b := budget{start: h.cfg.Now()}
	d, ok := ctx.Deadline()
	if !ok {
		return b
	}
	b.deadline = d
	b.work = d.Add(-h.cfg.SafetyMargin)
	b.cutoff = d.Add(-2 * h.cfg.FinishTimeout)
	if b.cutoff.Before(b.work) {
		b.cutoff = b.work
	}
	b.answer = d.Add(-finishSlack)
	b.leaseEnd = d.Add(time.Second)
	return b
}

// limited reports whether the invocation has a deadline.
func (b budget) limited() bool { return !b.deadline.IsZero() }

// window is the invocation's whole working time (start to work).
func (b budget) window() time.Duration { return b.work.Sub(b.start) }

// bookkeeping returns the context of a call Handle makes itself after the
// cut-off (an attempt count, a visibility change): it survives ctx's
// cancellation and ends by FinishTimeout and by b.answer, whatever the
// clock says then — a call that cannot finish in time is not made, so the
// answer never waits on a ledger or queue that does not answer.
func (h *Handler) bookkeeping(ctx context.Context, b budget) (context.Context, context.CancelFunc) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.FinishTimeout)
	if !b.limited() {
		return fctx, cancel
	}
	actx, cancel2 := context.WithDeadline(fctx, b.answer)
	return actx, func() { cancel2(); cancel() }
}
