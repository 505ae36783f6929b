package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/hookpack/hookpack/pkg/ledger"
)

// verdict is what happens to a message, as the batch's answer and the AWS
// calls that follow it (act).
type verdict int

const (
	// vDone: reported done (SQS deletes it).
	vDone verdict = iota
	// vDelete: a copy that must not run (its event is dead-lettered, or a
	// later message holds it); reported done, so SQS deletes it.
	vDelete
	// vRetry: reported failed, visible again after delay (its backoff).
	vRetry
	// vAgain: reported failed and visible at once; not an attempt.
	vAgain
	// vLeave: reported failed, its visibility left to whoever owns it now.
	vLeave
	// vDeadLetter: sent to the DLQ with reason, then reported done.
	vDeadLetter
	// vRun: nothing is decided before the handler runs: run it.
	vRun
	// vCount and vAskQueue are questions, not fates: decide needs the
	// failed attempt counted (facts.counted), or to know whether the queue
	// was created again (facts.askedQueue), and is called again.
	vCount
	vAskQueue
)

// facts are everything decide knows about one message: what its handler
// returned, what the ledger answered, and the clock. They are gathered
// once; the answers to decide's questions are added as it asks them.
type facts struct {
	// pending: the message has not run yet; the group's rules decide
	// whether it runs. blocked (and blockedDelay, blockedSet: the
	// visibility the first failed message before it in its batch got) says
	// it waits behind a failure of its conversation; earlierExpiring that an
	// earlier one was dead-lettered near the end of its retention; noTime
	// that the work deadline has passed. timedOut: it was still running at
	// the cut-off, and leaseLeft is how long its effects' leases last.
	pending, blocked, blockedSet, earlierExpiring, noTime, timedOut bool
	blockedDelay, leaseLeft                                         time.Duration
	// blockedByCopy: the failure it waits behind is a concurrent copy of
	// that message holding it (a batch invoked twice), which runs this
	// message too: it is never dead-lettered under that copy.
	blockedByCopy bool

	err          error
	ran, skipped int
	// doneByDeletion: the event's record counted as done only because an
	// earlier message's unfinished claim of it was deleted (ledger.done),
	// which holds within one queue incarnation only: the queue is asked.
	doneByDeletion bool
	// filtered: the handler ran and no destination's filter selected the
	// event (Forward), so nothing was delivered, by design.
	filtered bool
	// receives is the message's ApproximateReceiveCount.
	receives int
	// otherMessage: the record of a ledger conflict (a claim's) was
	// written by another message than this one.
	otherMessage bool
	// askedQueue, requeued: whether the message's queue was deleted and
	// created again since its incarnation was read.
	askedQueue, requeued bool
	// counted, attempt, countErr: the failed attempt's count, this one
	// included (attempt 0 when countErr).
	counted  bool
	attempt  int
	countErr error

	maxAttempts int
	now         time.Time
	// retentionEnd less margin is when the message must be dead-lettered
	// rather than wait (zero: unknown); sent and receivedAt date it for
	// that reason.
	retentionEnd     time.Time
	margin           time.Duration
	sent, receivedAt time.Time
	retry            Retry
	// ledgerRetention is how long the ledger keeps effect records.
	ledgerRetention time.Duration
	// horizonEnd is when the message's destination stops waiting for it
	// (its SentTimestamp plus the destination's horizon; zero: none known),
	// destination its name.
	horizonEnd  time.Time
	destination string
}

// waitFreeReceives is how many receives a waiting message may spend at the
// waits asked for; beyond them it waits at least the backoff of the
// receives beyond (waitFor).
const waitFreeReceives = maxBatch

// horizon sets the retry horizon h of destination name (none when h is 0
// or the message's SentTimestamp is unknown).
func (f *facts) horizon(h time.Duration, name string) {
	if h > 0 && !f.sent.IsZero() {
		f.horizonEnd, f.destination = f.sent.Add(h), name
	}
}

// waitFor is how long a waiting message stays hidden: the wait asked for
// or, without one, the backoff of its receives; after waitFreeReceives
// receives, at least the backoff of the receives beyond them, up to
// spacing, so that a destination asking for short waits for days never
// uses up the receives the worker gives a message (maxBatch × MaxAttempts,
// below the queue's maxReceiveCount) before its horizon, while one that
// throttles for minutes is tried again within minutes of its recovery: the
// waits grow from the backoff's base to spacing in a few receives (about
// a dozen of the hundreds a message has), and spacing then spreads what
// is left evenly over the time left.
func (f facts) waitFor(asked time.Duration) time.Duration {
	if asked <= 0 {
		asked = f.retry.Delay(max(f.receives, 1), 0)
	}
	if f.receives > waitFreeReceives {
		asked = max(asked, min(f.retry.Delay(f.receives-waitFreeReceives, 0), f.spacing()))
	}
	if rem := asked % time.Second; rem != 0 {
		asked += time.Second - rem
	}
	return min(asked, MaxDelay)
}

// spacing spreads the receives the message has left (maxBatch ×
// MaxAttempts less those it had) evenly over the time it has left (to its
// destination's horizon, or its retention's end less the margin): each
// wait at least that long covers the rest within them, however often it
// waits. Without either bound it is the backoff of the receives beyond
// waitFreeReceives.
func (f facts) spacing() time.Duration {
	end := f.horizonEnd
	if end.IsZero() && !f.retentionEnd.IsZero() {
		end = f.retentionEnd.Add(-f.margin)
	}
	left := maxBatch*f.maxAttempts - f.receives
	if end.IsZero() || f.maxAttempts <= 0 || left <= 0 {
		return f.retry.Delay(f.receives-waitFreeReceives, 0)
	}
	return end.Sub(f.now) / time.Duration(left)
}

// pastHorizon reports whether at is past the destination's horizon.
func (f facts) pastHorizon(at time.Time) bool {
	return !f.horizonEnd.IsZero() && !at.Before(f.horizonEnd)
}

// beyondHorizon is the reason a message is dead-lettered at its
// destination's horizon.
func (f facts) beyondHorizon(waitingOn error) error {
	dest := "the targetUrl"
	if f.destination != "" {
		dest = "destination " + f.destination
	}
	return fmt.Errorf("%w: %s stops waiting at %s; queued %s ago; waiting on: %w", ErrHorizon, dest,
		f.horizonEnd.UTC().Format(time.RFC3339), f.now.Sub(f.sent).Round(time.Minute), waitingOn)
}

// fate is decide's answer.
type fate struct {
	verdict verdict
	outcome outcome
	// delay is vRetry's visibility timeout.
	delay time.Duration
	// err is the error logged, and a dead letter's reason.
	err error
}

// minCopyWait is how long before its retention's end a message waiting
// behind a concurrent copy of its batch comes back.
const minCopyWait = time.Minute

// decide is the worker's one rule book: a message's fate from its facts.
// It is pure: the questions whose answers cost an AWS call (vCount,
// vAskQueue) are asked only on the paths that need them, and every rule is
// a row of TestDecide.
func decide(f facts) fate {
	var ce *ledger.ConflictError
	err := f.err
	switch {
	// The group's rules, before a message runs: behind a failure of its
	// conversation it waits as long as the failure does (or, that wait
	// reaching the end of its retention, is dead-lettered); behind one
	// dead-lettered near that end, it is dead-lettered too without an
	// attempt when as near, so a backlog behind a failing target drains a
	// batch per invocation; past the work deadline the next invocation
	// takes it at once.
	case f.pending && f.earlierExpiring && !f.blocked && f.nearEnd(f.now):
		return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: f.expiring(errEarlierExpiring)}
	case f.pending && f.blocked && f.blockedByCopy && f.nearEnd(f.now.Add(f.blockedDelay)) && f.retentionEnd.Sub(f.now) > minCopyWait:
		// The copy decides this message's fate (done: SQS deleted it, and
		// it never comes back); it comes back before SQS would delete it.
		return fate{verdict: vRetry, outcome: outBlocked, delay: min(f.blockedDelay, f.retentionEnd.Sub(f.now)-minCopyWait)}
	case f.pending && f.blocked && f.nearEnd(f.now.Add(f.blockedDelay)):
		return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: f.expiring(nil)}
	case f.pending && f.blocked && f.blockedSet:
		return fate{verdict: vRetry, outcome: outBlocked, delay: f.blockedDelay}
	case f.pending && f.blocked:
		return fate{verdict: vLeave, outcome: outBlocked}
	case f.pending && f.noTime:
		return fate{verdict: vAgain, outcome: outDeadline}
	// An event received longer ago than the ledger remembers completed
	// effects (less the ingest's dedup window: a later copy's receivedAt is
	// later) is refused: running it could repeat a forgotten effect.
	case f.pending && f.tooOld():
		return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: Permanent(fmt.Errorf(
			"%w: received %s ago; effect records are kept %s, so a completed effect may be forgotten and run again",
			ErrReplayTooOld, f.now.Sub(f.receivedAt).Round(time.Hour), f.ledgerRetention))}
	case f.pending:
		return fate{verdict: vRun}

	// Still running at the cut-off: a failed attempt (counted by Handle),
	// back once its effects' leases end.
	case f.timedOut:
		err := RetryAfter(fmt.Errorf("%w: the message was still running at the invocation's cut-off", ErrTimedOut), f.leaseLeft)
		return fate{verdict: vRetry, outcome: outTimedOut, delay: f.retry.Delay(max(f.attempt, 1), retryAfterOf(err)), err: err}

	// Done by an earlier message's deletion, as far as the cached queue
	// incarnation tells: a queue deleted and created again (whatever the
	// timing of the cache) runs it again at once under the new one.
	case err == nil && f.ran == 0 && f.doneByDeletion && !f.askedQueue:
		return fate{verdict: vAskQueue}
	case err == nil && f.ran == 0 && f.doneByDeletion && f.requeued:
		return fate{verdict: vAgain, outcome: outDeadline, err: errRequeued}
	case err == nil && f.ran == 0 && f.skipped > 0:
		return fate{verdict: vDone, outcome: outDuplicate}
	case err == nil && f.filtered:
		return fate{verdict: vDone, outcome: outFiltered}
	case err == nil:
		return fate{verdict: vDone, outcome: outProcessed}

	// The event's lifecycle: a dead-lettered event runs only through a
	// replay. Its dead letter was sent: delete this copy. It may not have
	// been (a lost send, or its answer): dead-letter this copy too, so the
	// event always has one.
	case errors.Is(err, ledger.ErrDead) && errors.As(err, &ce) && ce.Record.DeadSent:
		return fate{verdict: vDelete, outcome: outDeadAlready, err: err}
	case errors.Is(err, ledger.ErrDead) && errors.As(err, &ce):
		return fate{verdict: vDeadLetter, outcome: outDeadLettered,
			err: fmt.Errorf("%w (as message %s): %s", ErrDeadLettered, ce.Record.DeadMessage, ce.Record.Reason)}

	// Fenced by another message: a re-created queue restarted its
	// numbering (take the message again at once under the new
	// incarnation), or a later message holds the event (this copy is
	// stale). Fenced by its own newer receive, or its lease lost: whoever
	// owns it now decides.
	case errors.Is(err, ledger.ErrFenced) && f.otherMessage && !f.askedQueue:
		return fate{verdict: vAskQueue}
	case errors.Is(err, ledger.ErrFenced) && f.otherMessage && f.requeued:
		return fate{verdict: vAgain, outcome: outDeadline, err: err}
	case errors.Is(err, ledger.ErrFenced) && f.otherMessage:
		return fate{verdict: vDelete, outcome: outSuperseded, err: err}
	case errors.Is(err, ledger.ErrFenced), errors.Is(err, ledger.ErrLeaseLost):
		return fate{verdict: vLeave, outcome: outFenced, err: err}

	// Not attempts: too little time to start an effect (the next
	// invocation takes it at once), another worker's live lease (retry when
	// it ends).
	case errors.Is(err, ErrNoTime) && !IsPermanent(err):
		return fate{verdict: vAgain, outcome: outDeadline, err: err}
	case errors.Is(err, ledger.ErrInFlight) && !IsPermanent(err):
		return f.retryOrExpire(err)
	case errors.Is(err, ErrPaused) && !IsPermanent(err):
		// Back after the poll interval, as long as the pause lasts: no
		// attempt. The interval grows with the pause, so even a long one
		// spends few receives (destination.Poll: 94 over 12 days); only a
		// message that also spent most of the queue's maxReceiveCount
		// behind failures of its conversation ends here, with its reason,
		// before SQS's redrive would move it without one.
		d := retryAfterOf(err)
		switch {
		case f.nearEnd(f.now.Add(d)):
			return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: f.expiring(err)}
		case f.maxAttempts > 0 && f.receives >= MinMaxReceiveCount(f.maxAttempts)-receiveSlack/2:
			return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: fmt.Errorf(
				"gave up after %d receives waiting for a paused destination (none of them an attempt; SQS's maxReceiveCount would move it without a reason): %w", f.receives, err)}
		}
		return fate{verdict: vRetry, outcome: outPaused, delay: d, err: err}
	case errors.Is(err, ErrPaced) && !IsPermanent(err):
		// Back when the limit has its slot, or after the wait the
		// destination asked for (waitFor).
		d := f.waitFor(retryAfterOf(err))
		switch {
		case f.nearEnd(f.now.Add(d)):
			return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: f.expiring(err)}
		case f.pastHorizon(f.now.Add(d)):
			return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: f.beyondHorizon(err)}
		case f.maxAttempts > 0 && f.receives >= maxBatch*f.maxAttempts:
			// Waiting is no attempt, but every receive counts towards SQS's
			// maxReceiveCount: a destination that answers 429 to every
			// request for hours ends here, with its reason, before SQS
			// moves the message without one (MinMaxReceiveCount). A backlog
			// draining at its rate comes back when its slot fits, far from
			// this bound.
			return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: fmt.Errorf(
				"gave up after %d receives waiting for the rate limit (none of them an attempt; SQS's maxReceiveCount would move it without a reason): %w", f.receives, err)}
		}
		return fate{verdict: vRetry, outcome: outPaced, delay: d, err: err}

	// Attempts: counted first.
	case !f.counted:
		return fate{verdict: vCount}
	case IsPermanent(err):
		return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: err}
	case f.countErr != nil && f.maxAttempts > 0 && f.receives >= maxBatch*f.maxAttempts:
		// Its attempts cannot be counted, and it was received as often as
		// its attempts could ever take (MinMaxReceiveCount): it ends here,
		// with its reason, before SQS's maxReceiveCount moves it without one.
		return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: fmt.Errorf(
			"gave up after %d receives (its attempts could not be counted: %v): %w", f.receives, f.countErr, err)}
	case f.countErr != nil:
		// The worker never gives up on a count it does not know until the
		// receives reach what counted attempts could take (above).
		return f.retryOrExpire(errors.Join(err, f.countErr))
	case f.maxAttempts > 0 && f.attempt >= f.maxAttempts:
		return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: fmt.Errorf("gave up after %d attempts: %w", f.attempt, err)}
	case f.maxAttempts > 0 && f.receives >= maxBatch*f.maxAttempts:
		// Its waits (no attempts) and its attempts together were received
		// as often as counted attempts alone could take: it ends here, with
		// its reason, before SQS's maxReceiveCount moves it without one.
		return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: fmt.Errorf(
			"gave up after %d receives, %d of them attempts (in the others it waited): %w", f.receives, f.attempt, err)}
	default:
		return f.retryOrExpire(err)
	}
}

// errRequeued is why a message found its event done by a claim of another
// incarnation of its queue is taken again at once.
var errRequeued = errors.New("its queue was created again since its incarnation was read: taken again under the new one")

// retryOrExpire retries after the backoff of the attempt (the first when
// unknown), unless the message would come back after its retention's end
// less the margin: then it is dead-lettered with ErrExpiring.
func (f facts) retryOrExpire(err error) fate {
	d := f.retry.Delay(max(f.attempt, 1), retryAfterOf(err))
	if f.nearEnd(f.now.Add(d)) {
		return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: f.expiring(err)}
	}
	if f.pastHorizon(f.now.Add(d)) {
		return fate{verdict: vDeadLetter, outcome: outDeadLettered, err: f.beyondHorizon(err)}
	}
	return fate{verdict: vRetry, outcome: outRetried, delay: d, err: err}
}

// tooOld reports whether the event was received longer ago than the
// ledger's retention less DefaultReplayMargin.
func (f facts) tooOld() bool {
	return f.ledgerRetention > 0 && !f.receivedAt.IsZero() && f.now.Sub(f.receivedAt) > f.ledgerRetention-DefaultReplayMargin
}

// nearEnd reports whether at is past the message's retention end less the
// margin (false when its retention is unknown).
func (f facts) nearEnd(at time.Time) bool {
	return !f.retentionEnd.IsZero() && !at.Before(f.retentionEnd.Add(-f.margin))
}

// expiring is the reason a message near the end of its retention is
// dead-lettered: when SQS would delete it, its age, and what it waited on.
func (f facts) expiring(waitingOn error) error {
	reason := fmt.Sprintf("SQS deletes it at %s; queued %s ago", f.retentionEnd.UTC().Format(time.RFC3339), f.now.Sub(f.sent).Round(time.Minute))
	if !f.receivedAt.IsZero() {
		reason += fmt.Sprintf("; received %s ago", f.now.Sub(f.receivedAt).Round(time.Minute))
	}
	if waitingOn != nil {
		reason += "; waiting on: " + waitingOn.Error()
	}
	return fmt.Errorf("%w: %s", ErrExpiring, reason)
}
