package worker

import (
	"errors"
	"time"
)

// Sentinel errors.
var (
	// ErrNoHandler: no handler is registered for the event's provider and
	// type. Permanent: register one (Discard to drop a type on purpose).
	ErrNoHandler = errors.New("no handler for provider and event type")
	// ErrNoTarget: the tenant has no outbound configuration or target URL
	// for the forward effect. Permanent until it is configured; replay the
	// dead letters afterwards.
	ErrNoTarget = errors.New("no outbound target configured")
	// ErrNoDLQ: the source queue's dead-letter queue cannot be derived
	// (not a FIFO queue URL). The message is retried instead.
	ErrNoDLQ = errors.New("no dead-letter queue")
	// ErrNoTime: too little of the invocation is left to start an effect
	// and finish it before the work deadline. The message is made visible
	// at once for the next invocation; it is not a failed attempt.
	ErrNoTime = errors.New("not enough time left in the invocation")
	// ErrTimedOut: the message was still running when the batch reached its
	// cut-off (an effect that ignores its context). The attempt counts; the
	// message comes back after its effects' leases end.
	ErrTimedOut = errors.New("timed out")
	// ErrDeadLettered: the message's event was dead-lettered before, from
	// another copy or from this message whose deletion was lost; it is
	// dead-lettered again when that dead letter may not have been sent.
	ErrDeadLettered = errors.New("dead-lettered before")
	// ErrReplayTooOld: the message's event was received longer ago than the
	// ledger remembers completed effects (a dead letter replayed again and
	// again); running it could repeat them. Permanent: send the event again
	// as a new one if it is still wanted.
	ErrReplayTooOld = errors.New("event older than the ledger's memory")
	// ErrExpiring: the message would outlive its queue's retention before
	// its next attempt. It is dead-lettered with this reason instead of
	// being dropped by SQS without one.
	ErrExpiring = errors.New("message near the end of its queue retention")
	// ErrPaced: the message waits for a destination's (or a named limit's)
	// rate, or for the pause a 429 imposed on it. It comes back when the
	// limit has a slot for it (RetryAfter); waiting is not an attempt.
	ErrPaced = errors.New("waiting for the rate limit")
	// ErrPaused: the message waits for a paused destination (package
	// destination). It comes back after destination.Poll (RetryAfter) and
	// is delivered once the destination is resumed; waiting is not an
	// attempt, and it is dead-lettered, with its reason, only near the end
	// of its retention or of the queue's maxReceiveCount.
	ErrPaused = errors.New("waiting for a paused destination")
	// ErrNoDestination: a message of a destination's stream names a
	// destination the tenant's configuration does not hold (removed, or
	// added after the worker's cached copy was read). Retried as a failure,
	// dead-lettered with this reason when its attempts run out.
	ErrNoDestination = errors.New("no destination")
	// ErrHorizon: the message's next try would fall past its destination's
	// retry horizon (tenant.Destination.Horizon). It is dead-lettered with
	// this reason.
	ErrHorizon = errors.New("past the destination's retry horizon")
)

// Permanent marks err as permanent: retrying cannot succeed, so the worker
// dead-letters the message and lets its conversation continue. It returns
// nil for nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Permanent() bool { return true }

// RetryAfter marks a transient err with the minimum wait before the next
// attempt (a downstream's Retry-After, a lease's remaining time). It
// returns nil for nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err: err, d: d}
}

type retryAfterError struct {
	err error
	d   time.Duration
}

func (e *retryAfterError) Error() string             { return e.err.Error() }
func (e *retryAfterError) Unwrap() error             { return e.err }
func (e *retryAfterError) RetryAfter() time.Duration { return e.d }

// IsPermanent reports whether err, or an error it wraps, has a Permanent()
// bool method returning true (Permanent, forward.Error, …).
func IsPermanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// retryAfterOf returns the longest RetryAfter() carried by err's tree.
func retryAfterOf(err error) time.Duration {
	var longest time.Duration
	walk(err, func(e error) {
		if r, ok := e.(interface{ RetryAfter() time.Duration }); ok && r.RetryAfter() > longest {
			longest = r.RetryAfter()
		}
	})
	return longest
}

func walk(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, f)
		}
	}
}
