package worker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/ledger"
)

// TestDecide holds the worker's rules, one row each: a message's fate from
// its facts, with no AWS and no fakes.
func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	retry := Retry{Base: 4 * time.Second, Jitter: func() float64 { return 0 }}
	conflict := func(err error, r ledger.Record) error { return ledger.NewConflictError(r, err) }
	transient := errors.New("target answered 503")
	base := func(err error) facts {
		return facts{err: err, maxAttempts: 3, now: now, retry: retry, margin: 48 * time.Hour,
			retentionEnd: now.Add(10 * 24 * time.Hour), sent: now.Add(-4 * 24 * time.Hour)}
	}
	counted := func(f facts, n int, err error) facts { f.counted, f.attempt, f.countErr = true, n, err; return f }
	pending := func(mod func(*facts)) facts { f := base(nil); f.pending = true; mod(&f); return f }
	tests := []struct {
		name  string
		facts facts
		want  verdict
		out   outcome
		delay time.Duration
		// reason, when set, is a substring of the logged error (the dead
		// letter's reason).
		reason string
	}{
		{"nothing before it failed: it runs", pending(func(*facts) {}), vRun, "", 0, ""},
		{"behind a failure of its conversation: waits as long", pending(func(f *facts) { f.blocked, f.blockedSet, f.blockedDelay = true, true, time.Minute }), vRetry, outBlocked, time.Minute, ""},
		{"behind a fenced message: its visibility left alone too", pending(func(f *facts) { f.blocked = true }), vLeave, outBlocked, 0, ""},
		{"behind a failure, the wait past its retention's end: dead-lettered", pending(func(f *facts) {
			f.blocked, f.blockedSet, f.blockedDelay = true, true, 12*time.Hour
			f.retentionEnd = now.Add(60 * time.Hour)
		}), vDeadLetter, outDeadLettered, 0, "near the end of its queue retention"},
		{"behind a concurrent copy of its batch, the wait past its retention's end: waits for the copy, back before SQS deletes it", pending(func(f *facts) {
			f.blocked, f.blockedSet, f.blockedDelay, f.blockedByCopy = true, true, 12*time.Hour, true
			f.retentionEnd = now.Add(10 * time.Hour)
		}), vRetry, outBlocked, 10*time.Hour - time.Minute, ""},
		{"behind a concurrent copy, its retention ending now: dead-lettered", pending(func(f *facts) {
			f.blocked, f.blockedSet, f.blockedDelay, f.blockedByCopy = true, true, 12*time.Hour, true
			f.retentionEnd = now.Add(30 * time.Second)
		}), vDeadLetter, outDeadLettered, 0, "near the end of its queue retention"},
		{"behind one dead-lettered near its end, as near: dead-lettered without an attempt", pending(func(f *facts) {
			f.earlierExpiring, f.retentionEnd = true, now.Add(47*time.Hour)
		}), vDeadLetter, outDeadLettered, 0, "an earlier message of its conversation failed"},
		{"behind one dead-lettered near its end, not as near: it runs", pending(func(f *facts) { f.earlierExpiring = true }), vRun, "", 0, ""},
		{"past the work deadline: the next invocation takes it at once", pending(func(f *facts) { f.noTime = true }), vAgain, outDeadline, 0, ""},
		{"an event older than the ledger remembers: refused", pending(func(f *facts) {
			f.ledgerRetention, f.receivedAt = 35*24*time.Hour, now.Add(-29*24*time.Hour)
		}), vDeadLetter, outDeadLettered, 0, "older than the ledger's memory"},
		{"an event the ledger still remembers: it runs", pending(func(f *facts) {
			f.ledgerRetention, f.receivedAt = 35*24*time.Hour, now.Add(-27*24*time.Hour)
		}), vRun, "", 0, ""},
		{"still running at the cut-off: an attempt, back after its leases", func() facts {
			f := counted(base(nil), 2, nil)
			f.timedOut, f.leaseLeft = true, 40*time.Second
			return f
		}(), vRetry, outTimedOut, 40 * time.Second, "cut-off"},
		{"effects ran", facts{ran: 2}, vDone, outProcessed, 0, ""},
		{"every effect had completed: a duplicate", facts{skipped: 2}, vDone, outDuplicate, 0, ""},
		{"dead-lettered, its dead letter sent: delete this copy", base(conflict(ledger.ErrDead, ledger.Record{DeadMessage: "m1", DeadSent: true, Reason: "422"})), vDelete, outDeadAlready, 0, "dead-lettered"},
		{"dead-lettered, its dead letter maybe not sent: dead-letter this copy", base(conflict(ledger.ErrDead, ledger.Record{DeadMessage: "m1", Reason: "422"})), vDeadLetter, outDeadLettered, 0, "dead-lettered before (as message m1): 422"},
		{"fenced by another message: is the queue new?", func() facts { f := base(ledger.ErrFenced); f.otherMessage = true; return f }(), vAskQueue, "", 0, ""},
		{"fenced by another message of a re-created queue: again at once", func() facts {
			f := base(ledger.ErrFenced)
			f.otherMessage, f.askedQueue, f.requeued = true, true, true
			return f
		}(), vAgain, outDeadline, 0, ""},
		{"fenced by a later message: a stale copy, deleted", func() facts {
			f := base(ledger.ErrFenced)
			f.otherMessage, f.askedQueue = true, true
			return f
		}(), vDelete, outSuperseded, 0, ""},
		{"fenced by its own newer receive: left to it", base(ledger.ErrFenced), vLeave, outFenced, 0, ""},
		{"lease lost: left to its new owner", base(ledger.ErrLeaseLost), vLeave, outFenced, 0, ""},
		{"no time to start an effect: again at once, no attempt", base(ErrNoTime), vAgain, outDeadline, 0, ""},
		{"another worker's live lease: retry when it ends, no attempt", base(RetryAfter(ledger.ErrInFlight, time.Minute)), vRetry, outRetried, time.Minute, ""},
		{"waiting for a rate's slot: back exactly then, no attempt, no backoff", base(RetryAfter(ErrPaced, 90*time.Second)), vRetry, outPaced, 90 * time.Second, ""},
		{"waiting for a rate past its retention's end: dead-lettered with the reason", func() facts {
			f := base(RetryAfter(ErrPaced, 3*time.Hour))
			f.retentionEnd = now.Add(50 * time.Hour)
			return f
		}(), vDeadLetter, outDeadLettered, 0, "waiting on: waiting for the rate limit"},
		{"waiting for a rate on the receive that reaches what attempts could take: dead-lettered with its reason", func() facts {
			f := base(RetryAfter(ErrPaced, time.Minute))
			f.receives = maxBatch * f.maxAttempts
			return f
		}(), vDeadLetter, outDeadLettered, 0, "gave up after 30 receives waiting for the rate limit"},
		{"waiting for a paused destination: back after the poll, no attempt", base(RetryAfter(ErrPaused, time.Minute)), vRetry, outPaused, time.Minute, ""},
		{"waiting for a paused destination, more receives than attempts could take: still waiting", func() facts {
			f := base(RetryAfter(ErrPaused, time.Hour))
			f.receives = maxBatch*f.maxAttempts + receiveSlack/2 - 1
			return f
		}(), vRetry, outPaused, time.Hour, ""},
		{"waiting for a paused destination, near the queue's maxReceiveCount: dead-lettered with its reason before SQS moves it without one", func() facts {
			f := base(RetryAfter(ErrPaused, time.Hour))
			f.receives = maxBatch*f.maxAttempts + receiveSlack/2
			return f
		}(), vDeadLetter, outDeadLettered, 0, "gave up after 40 receives waiting for a paused destination"},
		{"waiting for a paused destination past its retention's end: dead-lettered with the reason", func() facts {
			f := base(RetryAfter(ErrPaused, 3*time.Hour))
			f.retentionEnd = now.Add(50 * time.Hour)
			return f
		}(), vDeadLetter, outDeadLettered, 0, "waiting on: waiting for a paused destination"},
		{"waiting for a paused destination and a rate: paused, back after the longer wait", base(RetryAfter(errors.Join(RetryAfter(ErrPaced, time.Second), RetryAfter(ErrPaused, time.Minute)), 0)), vRetry, outPaused, time.Minute, ""},
		{"asked to wait without a wait (a 429 alone): the backoff of its receives, no attempt", func() facts {
			f := base(ErrPaced)
			f.receives = 3
			return f
		}(), vRetry, outPaced, 8 * time.Second, ""},
		{"waiting past ten receives: at least the backoff of the receives beyond ten", func() facts {
			f := base(RetryAfter(ErrPaced, 2*time.Second))
			f.receives, f.horizonEnd, f.destination = 12, now.Add(18*time.Hour), "c"
			return f
		}(), vRetry, outPaced, 4 * time.Second, ""},
		{"waiting far past ten receives: the backoff up to what is left of them spread over its horizon", func() facts {
			f := base(RetryAfter(ErrPaced, 2*time.Second))
			f.receives, f.horizonEnd, f.destination = 24, now.Add(18*time.Hour), "c"
			return f
		}(), vRetry, outPaced, 3 * time.Hour, ""},
		{"waiting far past ten receives, no horizon: spread over its retention less the margin", func() facts {
			f := base(RetryAfter(ErrPaced, 2*time.Second))
			f.receives, f.retentionEnd = 24, now.Add(48*time.Hour+18*time.Hour)
			return f
		}(), vRetry, outPaced, 3 * time.Hour, ""},
		{"waiting past its destination's horizon: dead-lettered with the reason", func() facts {
			f := base(RetryAfter(ErrPaced, time.Hour))
			f.horizonEnd, f.destination = now.Add(30*time.Minute), "crm"
			return f
		}(), vDeadLetter, outDeadLettered, 0, "destination crm stops waiting at"},
		{"a targetUrl's wait past its horizon: dead-lettered with the reason", func() facts {
			f := base(RetryAfter(ErrPaced, time.Hour))
			f.horizonEnd = now.Add(30 * time.Minute)
			return f
		}(), vDeadLetter, outDeadLettered, 0, "the targetUrl stops waiting at"},
		{"a retry past its destination's horizon: dead-lettered with the reason", func() facts {
			f := counted(base(transient), 2, nil)
			f.horizonEnd, f.destination = now.Add(time.Second), "crm"
			return f
		}(), vDeadLetter, outDeadLettered, 0, "past the destination's retry horizon: destination crm"},
		{"failing on the receive that reaches what attempts could take (its waits took the rest): dead-lettered with its reason", func() facts {
			f := counted(base(transient), 1, nil)
			f.receives = maxBatch * f.maxAttempts
			return f
		}(), vDeadLetter, outDeadLettered, 0, "gave up after 30 receives, 1 of them attempts"},
		{"no destination's filter selects it: done", func() facts { f := base(nil); f.filtered = true; return f }(), vDone, outFiltered, 0, ""},
		{"a failure is counted first", base(transient), vCount, "", 0, ""},
		{"a permanent failure is counted first too", base(Permanent(transient)), vCount, "", 0, ""},
		{"permanent: dead-lettered with its reason", counted(base(Permanent(transient)), 1, nil), vDeadLetter, outDeadLettered, 0, "503"},
		{"transient, first attempt: backoff", counted(base(transient), 1, nil), vRetry, outRetried, 2 * time.Second, ""},
		{"transient, second attempt: doubled", counted(base(transient), 2, nil), vRetry, outRetried, 4 * time.Second, ""},
		{"transient, Retry-After longer than the backoff", counted(base(RetryAfter(transient, 10*time.Minute)), 1, nil), vRetry, outRetried, 10 * time.Minute, ""},
		{"transient, MaxAttempts-th: dead-lettered", counted(base(transient), 3, nil), vDeadLetter, outDeadLettered, 0, "gave up after 3 attempts: target answered 503"},
		{"transient, no MaxAttempts: retried however many", func() facts { f := counted(base(transient), 50, nil); f.maxAttempts = 0; return f }(), vRetry, outRetried, 6 * time.Hour, ""},
		{"count failed: retried as a first attempt", counted(base(transient), 0, errors.New("throttled")), vRetry, outRetried, 2 * time.Second, "throttled"},
		{"count failed, received as often as counted attempts could take: dead-lettered with its reason", func() facts {
			f := counted(base(transient), 0, errors.New("throttled"))
			f.receives = 10 * f.maxAttempts
			return f
		}(), vDeadLetter, outDeadLettered, 0, "gave up after 30 receives (its attempts could not be counted: throttled): target answered 503"},
		{"count failed, one receive fewer: retried", func() facts {
			f := counted(base(transient), 0, errors.New("throttled"))
			f.receives = 10*f.maxAttempts - 1
			return f
		}(), vRetry, outRetried, 2 * time.Second, "throttled"},
		{"count failed, no MaxAttempts: retried however often received", func() facts {
			f := counted(base(transient), 0, errors.New("throttled"))
			f.maxAttempts, f.receives = 0, 1000
			return f
		}(), vRetry, outRetried, 2 * time.Second, "throttled"},
		{"done only by an earlier message's deletion: is the queue new?", facts{skipped: 1, doneByDeletion: true}, vAskQueue, "", 0, ""},
		{"done by a deletion in another incarnation of the queue: again at once", facts{skipped: 1, doneByDeletion: true, askedQueue: true, requeued: true}, vAgain, outDeadline, 0, "created again"},
		{"done by a deletion in this queue: a duplicate", facts{skipped: 1, doneByDeletion: true, askedQueue: true}, vDone, outDuplicate, 0, ""},
		{"an effect ran: the event was not done, whatever its record said", facts{ran: 1, skipped: 1, doneByDeletion: true}, vDone, outProcessed, 0, ""},
		{"a retry past the retention's end less the margin: dead-lettered", func() facts {
			f := counted(base(transient), 1, nil)
			f.retentionEnd = now.Add(47 * time.Hour)
			return f
		}(), vDeadLetter, outDeadLettered, 0, "near the end of its queue retention: SQS deletes it at"},
		{"waiting on a live lease near the retention's end: dead-lettered", func() facts {
			f := base(RetryAfter(ledger.ErrInFlight, time.Hour))
			f.retentionEnd = now.Add(48*time.Hour + 30*time.Minute)
			return f
		}(), vDeadLetter, outDeadLettered, 0, "waiting on: effect in flight"},
		{"a replay older than the ledger's memory is permanent", counted(base(Permanent(ErrReplayTooOld)), 1, nil), vDeadLetter, outDeadLettered, 0, "older than the ledger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.facts)
			if got.verdict != tt.want || got.outcome != tt.out || got.delay != tt.delay {
				t.Errorf("decide() = verdict %d, outcome %q, delay %s; want %d, %q, %s", got.verdict, got.outcome, got.delay, tt.want, tt.out, tt.delay)
			}
			if tt.reason != "" && (got.err == nil || !strings.Contains(got.err.Error(), tt.reason)) {
				t.Errorf("decide() error = %v, want it to say %q", got.err, tt.reason)
			}
		})
	}
}
