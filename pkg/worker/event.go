package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/internal/deadline"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/ratelimit"
)

// effectStore claims, completes and fails effects under a fence (see
// package ledger for the semantics and errors of each call).
type effectStore interface {
	Claim(ctx context.Context, f ledger.Fence, k ledger.Key, lease time.Duration) (ledger.Lease, error)
	Complete(ctx context.Context, l ledger.Lease) error
	Fail(ctx context.Context, l ledger.Lease, reason string) error
	Bury(ctx context.Context, f ledger.Fence, keys []ledger.Key, own []ledger.Lease, reason string) error
	Buried(ctx context.Context, f ledger.Fence, keys []ledger.Key) error
}

// stateStore applies versioned entity updates under a fence.
type stateStore interface {
	Apply(ctx context.Context, f ledger.Fence, u ledger.Update) error
}

// attemptCounter counts the failed attempts at a queue message (see
// ledger.DynamoDB.FailedAttempt).
type attemptCounter interface {
	FailedAttempt(ctx context.Context, messageID string, receive int) (int, error)
}

// ledgerStore is everything the worker needs from the ledger.
type ledgerStore interface {
	effectStore
	stateStore
	attemptCounter
}

// Event is one queued event as a handler sees it: the envelope plus where
// and how often it was delivered, and the ledger-backed helpers. Its
// methods are not safe for concurrent use: run a message's effects one
// after another.
type Event struct {
	*envelope.Envelope
	// MessageID is the SQS message id (it changes on replay; never key
	// effects by it).
	MessageID string
	// Attempt is the message's ApproximateReceiveCount (1 on first
	// delivery). It also counts receives in which the message only waited
	// behind an earlier failure of its conversation, so it is an upper
	// bound of the attempts, not their number.
	Attempt int
	// GroupID is the SQS message group: the unit of order and fencing.
	GroupID string
	// Repeat is set, inside an effect's function, when an earlier run of
	// the same effect was interrupted after its claim (a crash, a timed-out
	// invocation, a completion write that never landed): it may have
	// reached the downstream system. The idempotency key is the same, so a
	// downstream that deduplicates by it absorbs the repeat; an effect that
	// cannot pass a key should check the downstream's state first.
	Repeat bool

	ledger ledgerStore
	lease  time.Duration
	now    func() time.Time
	finish func(context.Context) (context.Context, context.CancelFunc)

	// completeEach records the forward effect completed as soon as it
	// ran too (Config.CompleteEffects) instead of leaving it to the
	// deletion.
	completeEach bool
	// effectTimeout is a custom effect's budget (Config.EffectTimeout);
	// workDeadline, when set, is the time every effect must end by.
	effectTimeout time.Duration
	workDeadline  time.Time
	// window is the invocation's whole working time (start to work
	// deadline). An effect whose budget exceeds half of it (a deployment
	// whose effect timeouts are too long for its function timeout) starts
	// only in the first half, so it gets at least that much.
	window time.Duration
	// fence is the message's fencing token (its SequenceNumber and receive
	// count), or fenceErr why it has none.
	fence    ledger.Fence
	fenceErr error
	// held are the leases of effects that ran in this message and are not
	// recorded completed: the message's deletion does that (see settle).
	held []ledger.Lease
	// touched are the effects this message claimed or found completed:
	// the ones a dead letter buries (ledger.Bury).
	touched []ledger.Key
	// leases are the claims this message won: its own, which its dead
	// letter may bury while they are live.
	leases []ledger.Lease
	// event is the message's claim of its event's record (begin), until
	// the forward effect runs under it or it is released; eventDone
	// reports that the record showed the event's forward done, and
	// doneByDeletion that it did so by an unfinished claim of an earlier
	// message (which only its deletion completed).
	event                     *ledger.Lease
	eventDone, doneByDeletion bool
	// maxAttempts dead-letters a message whose effect was interrupted
	// that many times (Config.MaxAttempts).
	maxAttempts int
	// pace hands out the invocation's rate slots (nil outside Handle:
	// limits are not enforced); filtered is set by Forward when no
	// destination selects the event.
	pace     *pacer
	filtered bool
	// pauses is the invocation's view of the destinations' pauses (nil:
	// none is paused).
	pauses *pauses
	// expiring is when the message nears the end of its queue retention
	// (its end less Config.ExpiryMargin; zero: unknown): an effect
	// interrupted again past it ends the message with ErrExpiring. A claim
	// whose lease ends past recordFrom, a margin earlier, records its
	// success itself (late); unrecorded is why such a write failed (the
	// deletion records it then).
	expiring, recordFrom time.Time
	unrecorded           error
	// stream is the message's duty (queue.AttrStream); horizon its
	// destination's retry horizon, once Forward has read it.
	stream    queue.Stream
	horizon   time.Duration
	ran       int
	skipped   int
	effectDur time.Duration
}

// eventRecord is the effect whose ledger record is the event's own for a
// message of stream s: a destination's delivery for its stream, the
// built-in forward's record (ledger.EventEffect) otherwise.
func eventRecord(s queue.Stream) string {
	if s.Destination != "" {
		return DestinationEffect(s.Destination)
	}
	return ledger.EventEffect
}

// own is the effect of the event's own record for this message
// (eventRecord of its stream).
func (e *Event) own() string {
	if e.fence.Event == "" {
		return ledger.EventEffect
	}
	return e.fence.Event
}

// EffectKey returns the ledger key of this event's effect name.
func (e *Event) EffectKey(name string) ledger.Key {
	return ledger.Key{Tenant: e.Tenant, Event: e.Key, Effect: name}
}

// Once runs fn as the effect name of this event unless it already
// completed: it claims the effect in the ledger (fenced by this message's
// place in its conversation), calls fn with the effect's idempotency key —
// pass it to the downstream call (for example as the Idempotency-Key header)
// — and a context that ends after Config.EffectTimeout or at the work
// deadline, whichever comes first, and records the outcome: a failure at
// once, and a success at once too (one write more than the claim), so that
// no later fault — a lost deletion, a duplicate invocation, a whole batch
// that timed out, a redrive from the DLQ — runs a completed effect again.
// Only an effect interrupted while it runs (a crash, the invocation's
// timeout, a completion write that failed for good) may run again, with
// the same idempotency key. An effect starts only when EffectTimeout (or
// half the invocation's working time, if that is shorter) is left before
// the work deadline; otherwise the message ends with outcome
// "deadline" and the next invocation takes it, without using up an attempt.
//
// It returns nil when fn succeeded or the effect had completed before;
// fn's error (after recording the failure, so the next attempt may claim
// the effect at once); an error wrapping ledger.ErrFenced or
// ledger.ErrLeaseLost when a newer worker took the effect or the message
// over (stop: do not write anything else); a transient error carrying
// RetryAfter and wrapping ledger.ErrInFlight when another worker holds a
// live lease on the effect (this does not count as an attempt); an error
// wrapping ErrNoTime when too little time is left to start it; a permanent
// error for an invalid effect name or a message without a FIFO sequence
// number; or a wrapped ledger error.
func (e *Event) Once(ctx context.Context, name string, fn func(ctx context.Context, idempotencyKey string) error) error {
	return e.once(ctx, name, e.effectTimeout, false, fn)
}

// once is Once with the effect's time budget and, when deferred, the
// completion of a success left to the message's deletion (the forward
// effect: its receiver deduplicates by Idempotency-Key and webhook-id, so
// the rare repeat costs it nothing, and the pack saves a write per event).
func (e *Event) once(ctx context.Context, name string, budget time.Duration, deferred bool, fn func(ctx context.Context, idempotencyKey string) error) error {
	if err := ledger.ValidEffect(name); err != nil {
		return Permanent(err)
	}
	if e.fenceErr != nil {
		return Permanent(e.fenceErr)
	}
	deferred = deferred && !e.completeEach
	k := e.EffectKey(name)
	for _, l := range e.held {
		if l.Key == k { // ran earlier in this message
			e.skipped++
			return nil
		}
	}
	if need := min(budget, e.window/2); !e.workDeadline.IsZero() && e.now().Add(need).After(e.workDeadline) {
		return fmt.Errorf("effect %s needs %s: %w", name, need, ErrNoTime)
	}
	var l ledger.Lease
	switch {
	case name == e.own() && e.eventDone:
		e.skipped++
		return nil
	case name == e.own() && e.event != nil:
		// The event's record is this effect's: begin claimed it.
		l, e.event = *e.event, nil
	default:
		f := e.fence
		// A record of this effect left INPROGRESS by an earlier message was
		// interrupted (its success would have been completed at once), so it
		// never counts as done: it is taken over when its lease ends.
		f.Immediate = !deferred
		var done *ledger.Record
		var err error
		if l, done, err = e.claim(ctx, f, k); err != nil || done != nil {
			return err
		}
		if err := e.interrupted(ctx, l, name, deferred); err != nil {
			return err
		}
	}
	e.Repeat = l.Repeat

	start := e.now()
	fnctx, fncancel := context.WithTimeout(ctx, budget)
	ferr := fn(fnctx, k.IdempotencyKey())
	fncancel()
	e.Repeat = false
	e.effectDur += e.now().Sub(start)

	// Record the outcome even when ctx has ended: the effect ran.
	fctx, cancel := e.finish(ctx)
	defer cancel()
	if ferr != nil && IsPermanent(ferr) {
		// The message is dead-lettered next, and its dead letter turns this
		// claim into the event's outcome (ledger.Bury): keep the lease until
		// then, so no concurrent copy of the message (a batch invoked twice)
		// claims the effect in between and applies the event behind its
		// dead letter. If the dead letter fails, the lease's end frees it.
		return fmt.Errorf("effect %s: %w", name, ferr)
	}
	if ferr != nil {
		if err := e.ledger.Fail(fctx, l, ferr.Error()); err != nil {
			return errors.Join(fmt.Errorf("effect %s: %w", name, ferr), err)
		}
		return fmt.Errorf("effect %s: %w", name, ferr)
	}
	if deferred && e.now().Before(l.Expires) {
		// Nobody can have taken the effect over: leave the completion to
		// the message's deletion, unless the claim is late: record it now,
		// and leave it to the deletion only when that write fails.
		if e.late(l.Expires) {
			switch err := e.record(fctx, l); {
			case err == nil:
				e.ran++
				return nil
			case lost(err):
				return err
			default:
				e.unrecorded = errors.Join(e.unrecorded, fmt.Errorf("effect %s: %w", name, err))
			}
		}
		e.held = append(e.held, l)
		e.ran++
		return nil
	}
	// Complete it now: a custom effect always, a deferred one whose lease
	// ran out while it ran (the conditional Complete tells whether a newer
	// worker took it over).
	if err := e.complete(fctx, l); err != nil {
		return err
	}
	e.ran++
	return nil
}

// completed reports whether this message already ran effect name (it is
// skipped without a claim).
func (e *Event) completed(name string) bool {
	k := e.EffectKey(name)
	return slices.ContainsFunc(e.held, func(l ledger.Lease) bool { return l.Key == k })
}

// claim claims effect k under f. It returns the record in the way when the
// effect completed (or counts as completed: skip it), or the errors Once
// documents.
func (e *Event) claim(ctx context.Context, f ledger.Fence, k ledger.Key) (l ledger.Lease, done *ledger.Record, err error) {
	// Touched before the claim: a claim whose answer was lost may have
	// landed, and a dead letter must bury what it wrote.
	e.touch(k)
	l, err = e.ledger.Claim(ctx, f, k, e.lease)
	var ce *ledger.ConflictError
	switch {
	case errors.Is(err, ledger.ErrCompleted):
		e.skipped++
		r := ledger.Record{Key: k, Status: ledger.StatusCompleted}
		if errors.As(err, &ce) {
			r = ce.Record
		}
		return l, &r, nil
	case errors.Is(err, ledger.ErrDead), errors.Is(err, ledger.ErrFenced):
		return l, nil, err
	case errors.As(err, &ce): // in flight under another worker's live lease
		return l, nil, RetryAfter(err, ce.Record.LeaseExpires.Sub(e.now()))
	case errors.Is(err, ledger.ErrInvalidKey):
		return l, nil, Permanent(err)
	case err != nil:
		return l, nil, err
	}
	e.leases = append(e.leases, l)
	return l, nil, nil
}

// begin claims the event's own record (ledger.EventEffect) before the
// handler runs, whatever the handler: the record every copy of the event
// reads its fate from (dead-lettered: ErrDead; held by a newer message:
// ErrFenced). The built-in forward effect runs under this claim, so an
// event the default handler forwards costs this one write; a custom
// handler's message pays it beside its effects' own. A record that shows
// the forward done (eventDone) is no error: the handler runs, and each of
// its effects finds its own record.
func (e *Event) begin(ctx context.Context) error {
	if e.fenceErr != nil {
		return Permanent(e.fenceErr)
	}
	l, done, err := e.claim(ctx, e.fence, e.EffectKey(e.own()))
	switch {
	case err != nil:
		return err
	case done != nil:
		e.skipped-- // counted by the forward effect, if it runs
		e.eventDone, e.doneByDeletion = true, done.Status == ledger.StatusInProgress
		return nil
	}
	e.event = &l
	// The event's claim is completed by the message's deletion whatever the
	// handler (the forward under it, or none), unless seal records it.
	return e.interrupted(ctx, l, e.own(), true)
}

// late reports whether a claim of this message whose lease ends at end
// ends past recordFrom: a success under it is recorded at once (Event.once,
// seal), not left to the message's deletion, since the message's own
// redelivery may take it over past its expiring point, where interrupted
// dead-letters it. A deletion can be lost, and the redelivery would then
// find the claim unfinished, as if its run had been interrupted, and
// dead-letter a done event. recordFrom lies a whole margin before that
// point, so a redelivery meets an unrecorded claim there only after a gap
// of a margin (a worker outage); it then runs the effect again with the same
// key, as any lost deletion does.
func (e *Event) late(end time.Time) bool {
	return !e.recordFrom.IsZero() && end.After(e.recordFrom)
}

// seal records the event's claim completed when the handler succeeded
// without running the forward under it (a custom handler, or no destination
// selected the event) and its lease ends late: the deletion would complete
// it, and a lost deletion must not leave it looking interrupted. It returns
// why a late success of this message could not be recorded (the message is
// still done: its deletion records it, as any message's).
func (e *Event) seal(ctx context.Context) error {
	if e.event != nil && e.late(e.event.Expires) {
		if err := e.record(ctx, *e.event); err == nil || lost(err) {
			e.event = nil
		} else {
			e.unrecorded = errors.Join(e.unrecorded, fmt.Errorf("effect %s: %w", e.own(), err))
		}
	}
	if e.unrecorded != nil {
		return fmt.Errorf("near the end of its retention, left to the deletion: %w", e.unrecorded)
	}
	return nil
}

// release gives the event's claim up when no effect ran under it and the
// message is retried, so that its next attempt claims it at once rather
// than after the lease. A claim lost meanwhile is no error.
func (e *Event) release(ctx context.Context, reason string) error {
	if e.event == nil {
		return nil
	}
	l := *e.event
	e.event = nil
	if err := e.ledger.Fail(ctx, l, reason); err != nil && !lost(err) {
		return err
	}
	return nil
}

// touch records that this message claimed, or tried to claim, effect k.
func (e *Event) touch(k ledger.Key) {
	if !slices.Contains(e.touched, k) {
		e.touched = append(e.touched, k)
	}
}

// interrupted counts an attempt when l took over a run of this same
// message that was interrupted (it ran past its budget, or its invocation
// ended), so that an effect that hangs on every attempt ends in the DLQ with
// that reason after MaxAttempts instead of looping until SQS moves it
// without one. At MaxAttempts it gives the claim up and returns a permanent
// error wrapping ErrTimedOut. deferred says whether the effect's success
// is left to the message's deletion (see late).
func (e *Event) interrupted(ctx context.Context, l ledger.Lease, name string, deferred bool) error {
	if l.Taken == nil || !e.fence.Wrote(*l.Taken) {
		return nil
	}
	// The interrupted receive is the one the taken record was claimed in.
	n, err := e.ledger.FailedAttempt(ctx, e.MessageID, ledger.TokenReceive(l.Taken.Fence))
	var cause error
	switch {
	case !e.expiring.IsZero() && !e.now().Before(e.expiring) && (!deferred || e.late(l.Taken.LeaseExpires)):
		// Every invocation that runs it may end before the worker decides
		// (the effect hangs past it), so the retention's end is checked
		// here, or SQS would delete the message without a trace. A deferred
		// effect's claim counts only when its success would have been
		// recorded (late): else the message may have succeeded and lost its
		// deletion, and runs it again as any lost deletion does; its new
		// claim is late, so an effect that hangs again ends here next time
		// (and one that crashes then dead-letters a message that may have
		// been done: docs/ledger.md).
		cause = fmt.Errorf("%w: effect %s was interrupted again (it ran past its budget, or its invocation ended) at the end of the message's queue retention", ErrExpiring, name)
	case e.maxAttempts <= 0:
		return nil
	case err != nil && e.Attempt >= maxBatch*e.maxAttempts:
		// Not countable, and received as often as counted attempts could
		// take (decide's rule for an uncountable attempt): it ends here,
		// with its reason, before SQS's maxReceiveCount moves it without one.
		cause = fmt.Errorf("%w: effect %s was interrupted again after %d receives (it ran past its budget, or its invocation ended; its attempts could not be counted: %v)", ErrTimedOut, name, e.Attempt, err)
	case err != nil || n < e.maxAttempts:
		return nil // counted (or not countable yet): run it again
	default:
		cause = fmt.Errorf("%w: effect %s was interrupted in %d attempts (it ran past its budget, or its invocation ended)", ErrTimedOut, name, n)
	}
	fctx, cancel := e.finish(ctx)
	defer cancel()
	if err := e.ledger.Fail(fctx, l, cause.Error()); err != nil && !lost(err) {
		return errors.Join(cause, err)
	}
	return Permanent(cause)
}

// complete records l's effect completed (record), and gives the claim up
// when that fails.
func (e *Event) complete(ctx context.Context, l ledger.Lease) error {
	err := e.record(ctx, l)
	if err == nil || lost(err) {
		// Lost: a newer worker took the effect over; nothing of ours to
		// give up.
		return err
	}
	// The effect ran but its completion is not recorded. Give the lease up
	// so the next attempt need not wait for it to run out; that attempt runs
	// the effect again with the same idempotency key, and the downstream
	// absorbs the repeat. If this write is lost too, the lease's expiry does
	// the same.
	fctx, cancel := e.finish(ctx)
	defer cancel()
	if ferr := e.ledger.Fail(fctx, l, "ran, completion not recorded: "+err.Error()); ferr != nil && !lost(ferr) {
		return errors.Join(err, ferr)
	}
	return err
}

// record writes l's completion. The effect ran, so the write is retried (a
// repeat of a Complete that landed succeeds) until ctx, the clean-up
// budget, ends; each try gets half of what is left, so a request that hangs
// (a connection that never answers) leaves time for another. It returns the
// last error: a lost one at once.
func (e *Event) record(ctx context.Context, l ledger.Lease) error {
	for wait := completeRetryBase; ; wait *= 2 {
		actx, cancel := deadline.HalfLeft(ctx)
		err := e.ledger.Complete(actx, l)
		cancel()
		if err == nil || lost(err) || !pause(ctx, wait) {
			return err
		}
	}
}

// pause waits d, and reports false if ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// completeRetryBase is the first wait between completion writes.
const completeRetryBase = 50 * time.Millisecond

// settle records the effects that ran in this message completed. The
// worker calls it when it will not report the message done (it retries or
// dead-letters it), so that its next attempt or its replay skips them.
func (e *Event) settle(ctx context.Context) error {
	var errs []error
	for _, l := range e.held {
		if err := e.complete(ctx, l); err != nil {
			errs = append(errs, err)
		}
	}
	e.held = nil
	return errors.Join(errs...)
}

// lost reports whether a ledger write failed because the lease or the
// message went to a newer worker.
func lost(err error) bool {
	return errors.Is(err, ledger.ErrFenced) || errors.Is(err, ledger.ErrLeaseLost)
}

// ApplyIfNewer stores data as the state of entity (within the tenant) when
// version is greater than the stored version — for providers that do not
// deliver in order, use the provider's event time (epoch.Millis) or
// sequence number. It reports whether the update was applied; an older or
// equal version is not an error. It returns an error wrapping
// ledger.ErrFenced when a newer worker of the conversation has written the
// entity, or a wrapped ledger error.
func (e *Event) ApplyIfNewer(ctx context.Context, entity string, version int64, data []byte) (bool, error) {
	if e.fenceErr != nil {
		return false, Permanent(e.fenceErr)
	}
	err := e.ledger.Apply(ctx, e.fence, ledger.Update{Entity: entity, Version: version, Data: data})
	switch {
	case errors.Is(err, ledger.ErrStale):
		return false, nil
	case errors.Is(err, ledger.ErrInvalidKey):
		return false, Permanent(err)
	case err != nil:
		return false, err
	}
	return true, nil
}

// Pace waits for a slot of the tenant's limit name (1–64 characters of
// A-Z a-z 0-9 . _ : -) at rate l, shared by every invocation: call it in an
// effect's function right before the rate-limited call. The first call of
// an invocation reserves slots for every message of its batch (one ledger
// write per invocation and limit); the others take from them. When no slot
// fits before the invocation's work deadline it returns an error wrapping
// ErrPaced: return it, and the message comes back when the limit has a
// slot, without counting an attempt. An unlimited l returns nil at once.
func (e *Event) Pace(ctx context.Context, name string, l ratelimit.Limit) error {
	if err := ledger.ValidEffect(name); err != nil {
		return Permanent(fmt.Errorf("limit name: %w", err))
	}
	if e.pace == nil || l.Unlimited() {
		return nil
	}
	return e.pace.take(ctx, ratelimit.Key{Tenant: e.Tenant, Name: "limit:" + name}, l, e.effectTimeout, func() int { return len(e.pace.recs) })
}
