package worker

import (
	"math/rand/v2"
	"time"
)

// Retry defaults. MaxDelay is SQS's maximum visibility timeout.
const (
	DefaultRetryBase = 5 * time.Second
	MaxDelay         = 12 * time.Hour
)

// Retry is the backoff policy for transient failures: the delay becomes
// the message's visibility timeout, so SQS redelivers it (and unblocks its
// conversation) when it runs out.
type Retry struct {
	// Base is the first delay (DefaultRetryBase when 0; a negative Base
	// means no delay, for tests against emulators).
	Base time.Duration
	// Max caps every delay (and is itself capped at MaxDelay).
	Max time.Duration
	// Jitter returns a number in [0, 1); math/rand/v2's Float64 when nil.
	// Tests inject a fixed one.
	Jitter func() float64
}

// Delay returns how long to hide a message after its attempt-th attempt
// failed (from 1, as counted by the worker, not ApproximateReceiveCount): Base·2^(attempt-1)
// with equal jitter (half of it fixed, half random, so retries of many
// conversations spread out without ever collapsing to zero), then at least
// retryAfter, then at most Max, rounded up to whole seconds (SQS's unit).
func (r Retry) Delay(attempt int, retryAfter time.Duration) time.Duration {
	base, maxDelay := r.Base, r.Max
	if base == 0 {
		base = DefaultRetryBase
	}
	if base < 0 {
		base = 0
	}
	if maxDelay <= 0 || maxDelay > MaxDelay {
		maxDelay = MaxDelay
	}
	jitter := r.Jitter
	if jitter == nil {
		jitter = rand.Float64
	}
	if attempt < 1 {
		attempt = 1
	}
	d := base
	for i := 1; i < attempt && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	d = d/2 + time.Duration(jitter()*float64(d/2))
	d = max(d, retryAfter)
	d = min(d, maxDelay)
	if rem := d % time.Second; rem != 0 {
		d += time.Second - rem
	}
	return min(d, maxDelay)
}

// retry schedules the message again after the backoff of its attempt (the
// first when r.attempt is unknown).
func (h *Handler) retry(r result, err error) result {
	r.outcome, r.failed, r.err = outRetried, true, err
	r.visibility, r.setVisibility = h.cfg.Retry.Delay(max(r.attempt, 1), retryAfterOf(err)), true
	return r
}
