// Package deadline holds the per-call time rule of the functions: a call
// made under a Lambda deadline gets half the time left, so a request that
// hangs (a connection that never answers) still leaves time for a retry or
// an answer.
package deadline

import (
	"context"
	"time"
)

// HalfLeft returns ctx bounded to half the time left before its deadline,
// and its cancel function; without a deadline, ctx with a cancel. Computed
// when called: each try of a retried call gets half of what is left then.
func HalfLeft(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(d)/2)
}
