package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"pgregory.net/rapid"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/ratelimit"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
	"github.com/hookpack/hookpack/pkg/worker"
)

// The simulation: a deterministic, seeded, property-based state-machine
// test of the whole path an event takes after the signature check — the
// ingest's claim and send, the tenant's FIFO queue and its DLQ, the worker
// (the real Handler) and its ledger, the target — over twins with AWS's
// documented semantics (simtwin_test.go). Each event gets one of the
// handlers in handlerKinds, and some an offloaded body. A run draws its
// horizons (AWS's retentions, or compressed ones), then sequences of
// deliveries, provider retries, faults (crashes between any two AWS calls,
// lost answers, claims whose first answer is lost and retried, invocations
// with a deadline whose time runs out at any call or at a custom effect
// that ignores its context (the worker's cut-off), lost deletions,
// duplicate invocations, hung and refusing targets, handlers failing
// between two effects, attempt counts and completions the ledger cannot
// write, offloaded bodies S3 refuses, loses or serves again, queue
// re-creation, also under a running invocation (the sender's unrecorded
// deliveries retried into the new queue), a worker down until a
// backlog nears its retention's end), operator replays by every tool (by
// hand with or without the dead letter's attributes, twice, leaving the
// dead letters to be sent again, or saved and re-sent days or weeks later),
// destinations paused and resumed (simstream_test.go: each destination its
// own stream) and clock jumps of up to days, checks the invariants after
// every step, and shrinks a failure to its shortest history.
//
//	make simulate SEED=1 STEPS=1000000

const (
	simTenant   = "acme"
	simProvider = "stripe"
	charge      = "charge"
	notify      = "notify"
	maxAttempts = 3
	// retryHorizon is how long the provider retries a delivery.
	retryHorizon = 72 * time.Hour
)

// horizons are the periods a run's world keeps things for: the source
// queue's and its DLQ's retention (the twins' and the worker's
// QueueRetention), the worker's ExpiryMargin, and the ledger's retention
// (the ledger's and the worker's LedgerRetention). A run draws AWS's, or
// horizons compressed as make chaos's outage tenant's are, so that a
// conversation blocked until its retention's end (and a replay refused as
// too old) is a few clock jumps away rather than twelve days of failures.
type horizons struct {
	name                          string
	retention, margin, ledgerKeep time.Duration
	// advances are the clock jumps a run draws.
	advances []time.Duration
}

var (
	awsHorizons = horizons{name: "aws", retention: worker.DefaultQueueRetention, margin: worker.DefaultExpiryMargin, ledgerKeep: ledger.DefaultRetention,
		advances: []time.Duration{time.Second, 30 * time.Second, 6 * time.Minute, time.Hour, 13 * time.Hour, 4 * 24 * time.Hour, 13 * 24 * time.Hour}}
	// shortHorizons keep what the design relies on: the margin outlasts
	// every receive SQS gives a message before its maxReceiveCount (a head
	// whose target times the invocation out and whose attempts cannot be
	// counted takes 30 of them), and an event is refused as too old only
	// past twice the queue's retention (the ledger's less
	// worker.DefaultReplayMargin), so that only a replay can be. A message
	// is near its retention's end 40 minutes after it was sent.
	shortMargin   = time.Duration(worker.MinMaxReceiveCount(maxAttempts)) * visibilityTimeout
	shortLife     = 15 * time.Minute
	shortHorizons = horizons{name: "short", retention: shortMargin + shortLife, margin: shortMargin, ledgerKeep: worker.DefaultReplayMargin + 2*(shortMargin+shortLife),
		advances: []time.Duration{time.Second, 30 * time.Second, 6 * time.Minute, 20 * time.Minute, 40 * time.Minute, 2 * time.Hour, 4 * 24 * time.Hour}}
)

// handlerKinds are the handlers an event may get, as the effects each
// runs in order: the built-in forward alone (the default handler), the
// forward then a custom effect, one custom effect, two custom effects. A
// handler of two effects may fail between them (world.mode conv/between).
var handlerKinds = [][]string{
	{worker.ForwardEffect},
	{worker.ForwardEffect, charge},
	{charge},
	{notify, charge},
}

// simEvent is one provider event and what the world knows about it.
type simEvent struct {
	key, id, conv string
	n             int // place in its conversation, from 0
	// typ is its event type and tier its body's "tier" field (a
	// destination run's filters select on them).
	typ, tier string
	offload   bool
	// effects are what its handler runs, in order (one of handlerKinds).
	effects []string
	// queued: the event has a place in its conversation's send order, and
	// order is that place (world.place): its first send by the ingest that
	// landed, or, while it was never applied, a replay sent when no other
	// copy of it was queued.
	queued bool
	order  int
	claim  string // ingest record of its key: "" or "done"
	// first is the provider's first attempt; it retries for 3 days at most
	// (Stripe's horizon, the longest of the senders simulated here).
	first time.Time
	// tries and lastTry: the sender's deliveries of it and the last one's
	// time (its retry schedule, world.retriesDue).
	tries   int
	lastTry time.Time
	// runs of each effect downstream; durable: its completion is recorded
	// (ledger COMPLETED, or for the forward the deletion of the message
	// that ran it), so it must never run again.
	runs    map[string]int
	durable map[string]string
	// started counts the runs of each effect that started (its function
	// was called), whether or not they reached the target.
	started map[string]int
	// at are the forward effects (destinations) that applied it, and
	// applied is set once one did.
	at      map[string]bool
	applied bool
	// dead: dead-lettered by the worker with a reason, and no replay of it
	// ran since (claimed one of its records past the dead mark); deadFrom
	// are the messages its dead letters were sent for since.
	dead        bool
	deadReason  string
	deadFrom    map[string]bool
	lostByOwner bool
	// partlyLost: a message of it was lost with its queue after it was
	// applied at some destinations only: it keeps its place at those, and
	// has none left at the others (the queue that held it is gone).
	partlyLost bool
	// placedFor is the forward its place holds for when a replay of one
	// destination's stream placed it ("-" for the custom effects' stream:
	// no forward); "" when a message of every stream did (the ingest's
	// batch). A replay carries the event for its stream alone: at the
	// other destinations its first copy may be queued later.
	placedFor string
	// buriedReplay is a replay of it dead-lettered before its claim while
	// it was dead-lettered already (see world.knownHole).
	buriedReplay *simMsg
	// done names the message whose deletion after it was processed made
	// the event done (its sender's later copies are duplicates); doneAt
	// is when, per record (the event's: "", a stream's: its forward).
	done   string
	doneAt map[string]time.Time
	// streamDead and streamDone are dead and done for a destination's own
	// stream (simstream_test.go), by its forward effect: its record is
	// that stream's alone.
	streamDead, streamDone map[string]string
	// deadByStreamless: dead is the dead letter of a copy without a
	// stream (knownStreamlessCopyHole); streamDeadOnce: a destination's
	// stream of it was dead-lettered (deadReason's kind for streams).
	deadByStreamless, streamDeadOnce bool
}

// newSimEvent is event id of conversation conv, n-th in it, whose handler
// runs effects.
func (w *world) newSimEvent(id, conv string, n int, effects []string) *simEvent {
	e := &simEvent{key: simTenant + "#" + simProvider + "#" + id, id: id, conv: conv, n: n, effects: effects, typ: "charge.succeeded",
		runs: map[string]int{}, durable: map[string]string{}, started: map[string]int{}, deadFrom: map[string]bool{}, at: map[string]bool{},
		streamDead: map[string]string{}, streamDone: map[string]string{}, doneAt: map[string]time.Time{}}
	w.events = append(w.events, e)
	w.byKey[e.key] = e
	w.perConv[conv] = append(w.perConv[conv], e)
	return e
}

// fataler is a *rapid.T in the search, a *testing.T in the regressions.
type fataler interface {
	Fatalf(format string, args ...any)
}

type world struct {
	t   fataler
	hz  horizons
	now time.Time
	ids int
	src *fifo
	// srcGone: src was deleted under an invocation that still runs; its
	// CreatedTimestamp is still read until staleUntil (AWS does not
	// promise that no read succeeds while a queue is being deleted).
	srcGone    bool
	staleUntil time.Time
	ledger     *ledger.Memory
	handler    *worker.Handler
	// pauses are the destinations' states (paused, failing) the worker
	// reads and writes.
	pauses *destination.Memory
	// mode holds the faults that last: per conversation and effect, the
	// target's ("" ok, "transient", "transient retry-after", "permanent",
	// "hang", "timeout"); per
	// conversation, its handlers' between two effects (conv/between:
	// "transient", "permanent", "lost"); and the ledger calls that fail
	// without landing (ledger/FailedAttempt, ledger/Complete: "throttled").
	mode    map[string]string
	events  []*simEvent
	byKey   map[string]*simEvent
	perConv map[string][]*simEvent
	queuedN int
	// payloads are the bodies of the pointers ingest sent (what the world
	// knows), and s3 the payload bucket's state of each event's objects:
	// "" readable, "denied" (a transient error), "gone" (ErrPayloadGone).
	payloads map[string][]byte
	s3       map[string]string
	sess     *session
	cur      *simMsg
	// curEv is the worker's event of the message whose handler runs.
	curEv *worker.Event
	batch map[string]*simMsg
	// dlFrom are the messages of the batch the worker dead-lettered.
	dlFrom map[string]bool
	// ranForward lists the forwards that succeeded in each message of the
	// current invocation.
	ranForward map[*simMsg][]string
	// dests are the tenant's destinations (nil: a legacy targetUrl), and
	// limiter the rate limiter its worker instances share.
	dests   []*simDest
	limiter *ratelimit.Memory
	// answers collects the answers of the targets the running handler
	// called; pacedOnly are the messages of the invocation whose handler
	// only waited for a rate, attempted those whose attempt was counted,
	// handlerOK those whose handler returned nil.
	answers   *[]string
	pacedOnly map[string]bool
	attempted map[string]bool
	handlerOK map[string]bool
	steps     int
	history   []string
	// logs holds the worker's log lines of the current invocation, and
	// outcomes each message's outcome in them, errs its error, attemptOf
	// its count of failed attempts (0: none reported).
	logs      bytes.Buffer
	outcomes  map[string]string
	errs      map[string]string
	attemptOf map[string]int
	// drainFault, when set, draws the fault of each invocation the event
	// source mapping makes while the clock advances (none when nil).
	drainFault func() (string, int)
	// tally counts the steps of TestSimulation's phase (nil in the
	// regressions).
	tally *simTally
	// broken is the first violation found inside the current invocation.
	broken string
	// learned holds, per message, the receive in which the worker was
	// answered a count of maxAttempts or more (noteLimit's rule).
	learned map[string]int
	// answeredDone holds the messages the worker answered processed within
	// twice the expiry margin of their retention's end, whose deletion was
	// lost: their event is done, and their redelivery must never take its
	// own claims for interrupted runs (the worker records their success
	// itself; one answered earlier and redelivered only inside the last
	// margin, after an outage, runs its forward again, and may be if that
	// run is interrupted: docs/ledger.md).
	answeredDone map[string]bool
	// release is closed when the run ends: the stragglers (world.straggle)
	// then end too.
	release chan struct{}
	// lostUnder are the messages of a source queue deleted under the
	// running invocation (world.recreateUnder): their events' places are
	// forgotten once it ended.
	lostUnder []*simMsg
	// retryIntoNewQueue: the sender retries its unrecorded deliveries
	// into a queue created again (world.senderRetries).
	retryIntoNewQueue bool
	// senderFault draws the ingest's fault for each of those retries (nil:
	// none), so one may again go unrecorded and the sender retry it later.
	senderFault func() string
	// onSchedule: the sender retries its unacknowledged deliveries on its
	// own schedule as time passes (world.retriesDue), besides the
	// "provider retry" action's.
	onSchedule bool
	// saved are the dead letters the operator saved outside AWS
	// (world.save) at savedAt, not re-sent yet.
	saved   []*simMsg
	savedAt time.Time
}

// simEpoch is when a run's clock starts: far in the real future, so that
// the real timers of the worker's contexts (context.WithDeadline on an
// invocation's deadline, which the simulation sets on its own clock) never
// fire during a run; the simulation decides when an invocation's time is up.
var simEpoch = time.Date(2126, 11, 1, 0, 0, 0, 0, time.UTC)

const (
	// simSafetyMargin and simFinishTimeout are the worker's SafetyMargin
	// and FinishTimeout: its work deadline is simSafetyMargin before the
	// invocation's, its cut-off 2 × simFinishTimeout before it.
	simSafetyMargin  = 10 * time.Millisecond
	simFinishTimeout = time.Millisecond
	// simLambdaTimeout is the time a "deadline" invocation has, and
	// simLate what a "late" one has left when it starts (less than the
	// safety margin: it is past its work deadline at once).
	simLambdaTimeout = time.Minute
	simLate          = 5 * time.Millisecond
)

func newWorld(t fataler) *world { return newWorldOf(t, awsHorizons) }

// newWorldOf is a world whose queues, worker and ledger keep things for hz.
func newWorldOf(t fataler, hz horizons) *world {
	w := &world{t: t, hz: hz, now: simEpoch, mode: map[string]string{}, release: make(chan struct{}),
		byKey: map[string]*simEvent{}, perConv: map[string][]*simEvent{}, payloads: map[string][]byte{}, s3: map[string]string{}, ranForward: map[*simMsg][]string{}, limiter: newLimiter(), learned: map[string]int{}, answeredDone: map[string]bool{}}
	w.newQueues()
	w.ledger = ledger.NewMemory(ledger.Options{Now: w.clock, Retention: hz.ledgerKeep})
	w.pauses = destination.NewMemory()
	w.handler = w.newHandler()
	return w
}

func (w *world) clock() time.Time { return w.now }

func (w *world) newQueues() {
	w.src = newFIFO("hp-acme", w.now, &w.ids)
	w.src.dlq = newFIFO("hp-acme-dlq", w.now, &w.ids)
	w.src.maxRecv = worker.MinMaxReceiveCount(maxAttempts)
	w.src.retention, w.src.dlq.retention = w.hz.retention, w.hz.retention
}

// newHandler builds the worker as functions/worker does, with the twins
// and the simulation's clock; it lives as long as a warm instance.
func (w *world) newHandler() *worker.Handler {
	reg := worker.NewRegistry()
	fwd := worker.Forward(simTenants{w}, simPoster{w})
	// The event's handler runs its effects; a destination's own stream
	// runs the built-in forward alone, as functions/worker's registry does.
	run := func(ctx context.Context, ev *worker.Event, forwardOnly bool) error {
		w.cur, w.curEv = w.batch[ev.MessageID], ev
		e := w.byKey[ev.Key]
		if e == nil {
			w.violate("message %s's handler runs for %s, which is no event's", ev.MessageID, ev.Key)
			return errors.New("unknown event")
		}
		effects := e.effects
		if forwardOnly {
			effects = []string{worker.ForwardEffect}
		}
		for i, effect := range effects {
			if i > 0 {
				if err := w.between(e); err != nil {
					return err
				}
			}
			var err error
			if effect == worker.ForwardEffect {
				var answers []string
				w.answers = &answers
				err = fwd(ctx, ev)
				w.answers = nil
				w.ranHandler(e, w.cur, err, answers)
			} else {
				err = ev.Once(ctx, effect, func(ctx context.Context, key string) error {
					w.start(e, effect, ev.Repeat)
					return w.target(ctx, ev.Key, effect, key, "")
				})
			}
			if err != nil {
				return err
			}
		}
		if w.cur != nil {
			w.handlerOK[w.cur.id] = true
		}
		return nil
	}
	reg.HandleForward(func(ctx context.Context, ev *worker.Event) error { return run(ctx, ev, true) })
	reg.Handle(simProvider, worker.Any, func(ctx context.Context, ev *worker.Event) error { return run(ctx, ev, false) })
	return worker.New(worker.Config{
		// Every message's line must name its event (checked in handle).
		Logger: slog.New(slog.NewJSONHandler(&w.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Ledger: simLedger{w}, Handlers: reg, DLQ: simSQS{w}, Visibility: simSQS{w}, Queues: simSQS{w},
		Payloads: simPayloads{w}, Destinations: w.pauses, MaxAttempts: maxAttempts, Now: w.clock, Limiter: w.limiter, Wait: w.simWait,
		QueueRetention: w.hz.retention, ExpiryMargin: w.hz.margin, LedgerRetention: w.hz.ledgerKeep,
		// A lease ends before the message's visibility timeout, as under
		// Lambda (the invocation's deadline).
		Lease: 5 * time.Minute,
		// Clean-up calls that fail (a crashed invocation) are retried for
		// FinishTimeout of real time: keep it short.
		SafetyMargin: simSafetyMargin, FinishTimeout: simFinishTimeout,
		Retry: simRetry,
	})
}

type simTenants struct{ w *world }

func (t simTenants) Get(context.Context, string) (tenant.Outbound, error) { return t.w.outbound(), nil }

type simPoster struct{ w *world }

func (p simPoster) Post(ctx context.Context, r forward.Request) error {
	key := ""
	for _, e := range p.w.events {
		if forward.MessageID(e.key) == r.ID {
			key = e.key
		}
	}
	if key == "" {
		p.w.violate("a forward carries webhook-id %s, which is no event's", r.ID)
		return errors.New("unknown webhook-id")
	}
	effect, e := worker.ForwardEffect, p.w.byKey[key]
	if p.w.dests != nil {
		d := (*simDest)(nil)
		for _, o := range p.w.dests {
			if o.URL == r.URL {
				d = o
			}
		}
		if d == nil || r.Headers["Hookpack-Destination"] != d.Name {
			p.w.violate("a forward of %s goes to %s (Hookpack-Destination %q), which is no destination's", e.id, r.URL, r.Headers["Hookpack-Destination"])
			return errors.New("unknown destination")
		}
		if !d.selects(e) {
			p.w.violate("%s (%s, tier %s) reaches destination %s, whose filter excludes it", e.id, e.typ, e.tier, d.Name)
		}
		effect = d.effect
		p.w.checkArrival(d, e)
	}
	p.w.start(e, effect, p.w.curEv.Repeat)
	return p.w.target(ctx, key, effect, r.IdempotencyKey, r.ID)
}

type simPayloads struct{ w *world }

// Get reads an offloaded body as S3 answers it in the bucket's state
// (world.s3): denied is transient, gone is queue.ErrPayloadGone.
func (p simPayloads) Get(ctx context.Context, pointer string) ([]byte, error) {
	if p.w.expired(ctx) {
		return nil, errExpired
	}
	if !p.w.sess.call() {
		return nil, errCrashed
	}
	b, ok := p.w.payloads[pointer]
	if !ok {
		p.w.violate("the worker reads %s, which ingest never offloaded", pointer)
		return nil, queue.ErrPointer
	}
	switch p.w.readable(pointer) {
	case "denied":
		return nil, errors.New("read payload: AccessDenied: simulated S3 refusal")
	case "gone":
		return nil, fmt.Errorf("%w: simulated lifecycle expiry", queue.ErrPayloadGone)
	}
	if p.w.sess.lost() {
		return nil, errLost
	}
	return b, nil
}

// readable is the bucket's state of the object body points to ("" when it
// can be read, or body is no pointer).
func (w *world) readable(body string) string {
	if _, ok := w.payloads[body]; !ok {
		return ""
	}
	if e := w.eventOfBody(body); e != nil {
		return w.s3[e.id]
	}
	return ""
}

// target is the tenant's system: it applies an effect, refuses it, or
// hangs (the invocation is killed by its timeout while it waits).
func (w *world) target(_ context.Context, eventKey, effect, idemKey, webhookID string) error {
	e := w.byKey[eventKey]
	if webhookID == "" && w.ignoresContext(e.conv+"/"+effect) {
		w.straggle(e, effect)
	}
	// The request leaves now, even when the operator re-creates the queue
	// while it is in flight (world.atCall moves the clock on).
	sent := w.now
	if !w.sess.call() {
		if w.sess.failedCall && w.sess.calls == w.sess.timeUpAt {
			// The request left; its answer did not come in time.
			w.saw("failed")
			return fmt.Errorf("target: %w", context.DeadlineExceeded)
		}
		return errCrashed
	}
	if want := (ledger.Key{Tenant: simTenant, Event: eventKey, Effect: effect}).IdempotencyKey(); idemKey != want {
		w.violate("%s of %s carries Idempotency-Key %s, want %s", effect, e.id, idemKey, want)
	}
	if isForward(effect) && webhookID != forward.MessageID(eventKey) {
		w.violate("%s of %s carries webhook-id %s", effect, e.id, webhookID)
	}
	w.arrive(effect, sent)
	mode := w.mode[e.conv+"/"+effect]
	switch {
	case mode == "":
		w.saw("ok")
	case strings.HasPrefix(mode, "429") && w.rated(effect):
		w.saw("paced")
	default:
		w.saw("failed")
	}
	switch mode {
	case "transient":
		return errors.New("target: 503 service unavailable")
	case "transient retry-after":
		// A custom effect's failure that asks for a long wait: a counted
		// attempt whose retry (three quarters of the expiry margin) can
		// outlast the retention left to a message near its end.
		return worker.RetryAfter(errors.New("target: 503 service unavailable, retry later"), 3*w.hz.margin/4)
	case "permanent":
		return worker.Permanent(errors.New("target: 422 unprocessable"))
	case "hang":
		// The call never answers: the effect's context ends at its budget.
		return fmt.Errorf("target: %w", context.DeadlineExceeded)
	case "timeout":
		if !w.sess.deadline.IsZero() {
			// A forward's request ends with its context: at the work
			// deadline.
			w.timeUp("a forward that never answers")
			return fmt.Errorf("target: %w", context.DeadlineExceeded)
		}
		// The call never answers and Lambda ends the invocation at its
		// timeout: nothing of the batch's answer survives.
		w.sess.crashed = true
		return context.DeadlineExceeded
	case "429", "429 retry-after":
		return w.answer429(mode)
	}
	w.apply(e, effect)
	if w.sess.lost() {
		return errLost // applied, but the worker hears a timeout
	}
	return nil
}

// ignoresContext reports whether the target call about to be made under
// the running invocation ignores its context past the cut-off: the call of
// a custom effect (a forward's request ends with its context) whose
// target never answers, or at which the invocation's time runs out,
// under an invocation with a deadline, unless the invocation crashes
// first.
func (w *world) ignoresContext(modeKey string) bool {
	s := w.sess
	if s == nil || s.cancel == nil || s.crashed || s.crashAfter >= 0 && s.calls >= s.crashAfter {
		return false
	}
	return w.mode[modeKey] == "timeout" || s.timeUpAt == s.calls+1
}

// straggle is a custom effect's target call that ignores its context
// under an invocation with a deadline: the clock reaches the cut-off,
// where the worker stops waiting (the invocation's context ends, as it
// would at the deadline) and answers for the batch without it; the call
// never returns (the execution environment is reclaimed): its goroutine
// ends with the run, running only its deferred calls.
func (w *world) straggle(e *simEvent, effect string) {
	if cut := w.sess.deadline.Add(-2 * simFinishTimeout); w.now.Before(cut) {
		w.now = cut
	}
	w.logf("    %s of %s never answers and ignores its context: the worker's cut-off answers without it", effect, e.id)
	w.sess.timeUpAt = 0
	if w.cur != nil {
		w.sess.straggled = append(w.sess.straggled, w.cur)
	}
	w.sess.cancel()
	<-w.release
	runtime.Goexit()
}

// timeUp moves the clock to the running invocation's work deadline: its
// time ran out at what.
func (w *world) timeUp(what string) {
	if work := w.sess.deadline.Add(-simSafetyMargin); w.now.Before(work) {
		w.now, w.sess.jumped = work, true
	}
	w.logf("    the invocation's time runs out at %s: the clock reaches its work deadline", what)
}

// atCall is the invocation's session's hook before its call n lands: the
// operator deletes the source queue and creates it again while the
// invocation runs, or its time runs out there (the call fails, as an AWS
// call whose context ended).
func (w *world) atCall(n int) bool {
	switch n {
	case w.sess.recreateAt:
		w.recreateUnder()
	case w.sess.timeUpAt:
		w.timeUp(fmt.Sprintf("its AWS call %d", n))
		w.sess.failedCall = true
		return true
	}
	return false
}

// recreateUnder is the operator's tenant.sh remove --force and add while
// an invocation runs: the source queue is deleted (its messages lost) and
// created again 61 s later; the invocation goes on with its messages of
// the old queue.
func (w *world) recreateUnder() {
	w.logf("    operator deletes the source queue under the invocation (%d messages lost) and creates it again", len(w.src.msgs))
	deletedAt := w.now
	w.lostUnder = append(w.lostUnder, w.dropSource()...)
	w.createSource(deletedAt)
	w.sess.jumped = true
}

// between is what a handler of two effects does after the first one
// returned: it fails as its conversation's mode says (an error of its own,
// or the answer of a call outside the ledger lost), before the second
// effect is claimed.
func (w *world) between(e *simEvent) error {
	switch w.mode[e.conv+"/between"] {
	case "transient":
		return errors.New("handler: downstream answered 503 between two effects")
	case "permanent":
		return worker.Permanent(errors.New("handler: downstream refused the event between two effects"))
	case "lost":
		return fmt.Errorf("handler: the answer between two effects was lost: %w", context.DeadlineExceeded)
	}
	return nil
}

// start records that a run of an effect of e starts (its function is
// called), and checks the invariants of a run's start: an effect of a
// dead-lettered event runs only after a replay of it ran, and a run after
// another one started knows it may repeat it (ev.Repeat).
func (w *world) start(e *simEvent, effect string, repeat bool) {
	m := w.cur
	w.logf("    %s of %s starts (message %s, %s, Repeat=%v)", effect, e.id, msgID(m), from(m), repeat)
	if reason, dead := e.deadAt(m, effect); dead && !w.knownHole(e, m) && !w.streamlessHole(e, m, effect, "") {
		w.violate("%s of %s starts after its dead letter (%s) and before any replay of it ran (message %s, %s)", effect, e.id, reason, msgID(m), from(m))
	}
	if n := e.started[effect]; n > 0 && !repeat {
		w.violate("%s of %s starts again (run %d) with ev.Repeat false, after an earlier run started", effect, e.id, n+1)
	}
	e.started[effect]++
}

// claimed notes what a claim of one of an event's records that landed
// tells: a replay of the event ran when a message of the operator's, not
// itself dead-lettered since, got past its dead mark.
func (w *world) claimed(f ledger.Fence, k ledger.Key, err error) {
	e, m := w.byKey[k.Event], w.batch[f.MessageID]
	if m != nil && err == nil {
		m.claimed = true
	}
	if e == nil || m == nil || m.from == byIngest || e.deadFrom[f.MessageID] {
		return
	}
	if rec := record(m); rec != "" {
		// A replay of a destination's stream gets past that stream's mark.
		if k.Effect == rec && (err == nil || errors.Is(err, ledger.ErrCompleted)) {
			delete(e.streamDead, rec)
		}
		return
	}
	if err == nil || errors.Is(err, ledger.ErrCompleted) {
		if e.dead {
			w.logf("    replay %s of %s gets past its dead mark", m.id, e.id)
		}
		e.dead, e.deadFrom, e.deadByStreamless = false, map[string]bool{}, false
	}
}

// knownHoles exempts the two holes the search found in the worker before
// the event record's dead mark followed a replay's dead letter and a held
// message stopped counting its batch's earlier claim as done: false, so the
// search fails on them again (true only to measure an older worker).
const knownHoles = false

// knownHole reports whether a run of e from m after e's dead letter is
// the worker's known hole (not fixed yet, docs/reliability.md): m is a
// replay dead-lettered before it claimed anything while its event was
// dead-lettered already (behind an expiring message), so the event's
// record keeps the first dead letter's mark, and m's redelivery (its
// deletion lost) passes it as a replay would. It counts the run in the
// tally, which prints it, and logs it.
func (w *world) knownHole(e *simEvent, m *simMsg) bool {
	if !knownHoles || m == nil || e.buriedReplay != m {
		return false
	}
	w.logf("    KNOWN HOLE: replay %s of %s runs after its own dead letter", m.id, e.id)
	if w.tally != nil {
		w.tally.known.Add(1)
	}
	return true
}

// apply records an effect applied downstream and checks the invariants
// that concern a run.
func (w *world) apply(e *simEvent, effect string) {
	m := w.cur
	replayed := m != nil && m.from != byIngest
	w.logf("    target applies %s of %s (message %s, %s)", effect, e.id, msgID(m), from(m))
	if why, ok := e.durable[effect]; ok && !w.streamlessHole(e, m, effect, why) {
		w.violate("%s of %s ran again after it completed (%s)", effect, e.id, why)
	}
	if reason, dead := e.deadAt(m, effect); dead && !w.knownHole(e, m) && !w.streamlessHole(e, m, effect, "") {
		w.violate("%s of %s applied after its dead letter (%s) and before any replay of it ran (message %s, %s)", effect, e.id, reason, msgID(m), from(m))
	}
	e.runs[effect]++
	if isForward(effect) {
		w.ranForward[m] = append(w.ranForward[m], effect)
		if !e.at[effect] && !replayed && !e.partlyLost && (e.placedFor == "" || e.placedFor == effect) {
			for _, o := range w.perConv[e.conv] {
				if o.order > e.order && o.at[effect] {
					w.violate("%s applied at %s after %s, which was queued after it (conversation %s)", e.id, effect, o.id, e.conv)
				}
			}
		}
		e.at[effect] = true
		// An event applied at one destination keeps its first place in
		// the send order (world.sendBack, world.recreate).
		e.applied = true
	}
}

func msgID(m *simMsg) string {
	if m == nil {
		return "-"
	}
	return m.id
}

func from(m *simMsg) provenance {
	if m == nil {
		return "-"
	}
	return m.from
}

// durable records that an effect of an event completed for good.
func (w *world) durable(eventKey, effect, why string) {
	if e := w.byKey[eventKey]; e != nil {
		if _, ok := e.durable[effect]; !ok {
			e.durable[effect] = why + " at " + w.now.Format("Jan 2 15:04:05")
		}
	}
}

// deadLettered records a dead letter the worker sent with its reason.
func (w *world) deadLettered(m *simMsg) {
	if w.dlFrom != nil {
		w.dlFrom[m.attrs[worker.AttrMessageID]] = true
	}
	if m.event == nil {
		w.violate("dead letter %s: its body names no event", m.id)
		return
	}
	// It names its event wherever the message it was sent for did: by a
	// body the worker could read, or by the attributes it carried.
	src := w.batch[m.attrs[worker.AttrMessageID]]
	named := w.readable(m.body) == "" || src != nil && src.attrs[eventKeyAttr] != ""
	if named && m.attrs[worker.AttrEventKey] != m.event.key {
		w.violate("dead letter %s of %s carries %s=%q: inspect cannot find it by its event", m.id, m.event.id, worker.AttrEventKey, m.attrs[worker.AttrEventKey])
	}
	reason := m.attrs[worker.AttrReason]
	if reason == "" {
		w.violate("dead letter %s of %s has no reason", m.id, m.event.id)
	}
	w.checkPacedDeadLetter(src, m.event, reason)
	if src != nil {
		w.checkPausedDeadLetter(src, m.event, reason)
	}
	// Every copy of a body ingest sent is a valid message, whichever
	// attributes a replay kept: the worker may not refuse it as invalid.
	for _, invalid := range []error{envelope.ErrInvalid, queue.ErrPointer} {
		if strings.Contains(reason, invalid.Error()) {
			w.violate("dead letter %s of %s refuses the body ingest sent (%s, attributes %v): %s", m.id, m.event.id, from(src), attrNames(src), reason)
		}
	}
	if !named {
		// Nothing named its event to the worker (a body it could not read,
		// re-sent without attributes): it could mark no record, so the
		// event is not held dead-lettered; its copies may run it. Nor
		// could it know the event done: the dead letter is no outcome of
		// the event's.
		w.logf("    dead-lettered %s as %s, naming no event: %s", m.event.id, m.id, reason)
		return
	}
	// A replay older than the ledger's memory is dead-lettered with that
	// reason, done or not (README: the ledger may have forgotten it done):
	// a copy whose envelope was received more than the ledger's retention
	// less the replay margin ago, or whose event's done record the ledger
	// may have forgotten.
	forgotten := func(rec string) bool {
		if !strings.Contains(reason, worker.ErrReplayTooOld.Error()) {
			return false
		}
		if at, ok := w.receivedAt(m.body); ok && w.now.Sub(at) > w.hz.ledgerKeep-worker.DefaultReplayMargin {
			return true
		}
		return w.now.Sub(m.event.doneAt[rec]) >= w.hz.ledgerKeep
	}
	if rec := record(m); rec != "" {
		// A destination's stream: its record alone is dead.
		if done := m.event.streamDone[rec]; done != "" && !forgotten(rec) {
			w.violate("%s is done at %s (its message %s was processed and deleted) and dead-lettered as %s: %s", m.event.id, rec, done, m.id, reason)
		}
		m.event.streamDead[rec], m.event.streamDeadOnce = reason, true
		m.event.deadFrom[m.attrs[worker.AttrMessageID]] = true
		w.logf("    dead-lettered %s's %s as %s: %s", m.event.id, streamName(m), m.id, reason)
		return
	}
	if e := m.event; e.done != "" && !forgotten("") {
		w.violate("%s is done (its message %s was processed and deleted) and dead-lettered as %s: %s", e.id, e.done, m.id, reason)
	}
	// A done message that comes back is not an interrupted one. (It may be
	// dead-lettered for a failure of its own receive near the end of its
	// retention — a lost answer, a body it cannot read, its handler's error —
	// as any message failing there: the worker cannot read its event's
	// record through them.)
	if src != nil && w.answeredDone[src.id] && strings.Contains(reason, "interrupted") {
		w.violate("%s is done (the worker answered its message %s processed; the deletion was lost) and dead-lettered as %s, as interrupted: %s", m.event.id, src.id, m.id, reason)
	}
	if src != nil && src.from != byIngest && !src.claimed && m.event.dead {
		m.event.buriedReplay = src
	}
	m.event.dead, m.event.deadReason = true, reason
	m.event.deadByStreamless = w.streamlessCopy(src)
	m.event.deadFrom[m.attrs[worker.AttrMessageID]] = true
	w.logf("    dead-lettered %s as %s: %s", m.event.id, m.id, reason)
}

// attrNames lists the names of m's attributes.
func attrNames(m *simMsg) []string {
	if m == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(m.attrs))
}

// envelopeOf decodes a message body, an offloaded one through its
// payload, or returns nil.
func (w *world) envelopeOf(body string) *envelope.Envelope {
	if b, ok := w.payloads[body]; ok {
		body = string(b)
	}
	env, err := envelope.Decode([]byte(body))
	if err != nil {
		return nil
	}
	return env
}

// receivedAt is when the ingest received the copy of its event body
// carries (its envelope's receivedAt), if the body can be decoded.
func (w *world) receivedAt(body string) (time.Time, bool) {
	if env := w.envelopeOf(body); env != nil {
		return env.ReceivedAt, true
	}
	return time.Time{}, false
}

func (w *world) eventOfBody(body string) *simEvent {
	if env := w.envelopeOf(body); env != nil {
		return w.byKey[env.Key]
	}
	return nil
}

func (w *world) queueByURL(url string) *fifo {
	switch url {
	case w.src.url():
		if w.srcGone {
			return nil
		}
		return w.src
	case w.src.dlq.url():
		return w.src.dlq
	}
	return nil
}

func (w *world) logf(format string, args ...any) {
	line := fmt.Sprintf("%s  ", w.now.Format("Jan 02 15:04:05")) + fmt.Sprintf(format, args...)
	w.history = append(w.history, line)
}

// violate fails the history with a broken invariant. Inside an invocation
// it is found on one of the worker's goroutines, whose panics the worker
// may recover (a handler's): the first one is kept, and handle fails once
// the invocation returned.
func (w *world) violate(format string, args ...any) {
	if w.sess != nil {
		if w.broken == "" {
			w.broken = fmt.Sprintf(format, args...)
		}
		return
	}
	w.fail(format, args...)
}

func (w *world) fail(format string, args ...any) {
	where := ""
	if w.tally != nil {
		where = fmt.Sprintf(" (first found after %d steps %s)", w.tally.first(w.tally.steps.Load()+int64(w.steps)), w.tally.what)
	}
	w.t.Fatalf("VIOLATION: %s%s\nhistory:\n%s", fmt.Sprintf(format, args...), where, strings.Join(w.history, "\n"))
}

// --- actions ---

// deliver is one delivery of an event by the provider (its first send or
// a retry) through the ingest: read the key, send, record it; fault
// "before" crashes before the send, "after" after it (the record is lost
// and the provider, answered 5xx, retries). Nothing marks a delivery in
// flight: every one that reads the key unrecorded sends.
func (w *world) deliver(e *simEvent, fault string) {
	if e.first.IsZero() {
		e.first = w.now
	}
	e.tries, e.lastTry = e.tries+1, w.now
	w.logf("provider delivers %s (%s, %s) ingest fault=%q", e.id, e.conv, strings.Join(e.effects, "+"), fault)
	if e.claim == "done" {
		w.logf("    ingest: 200 duplicate")
		return
	}
	if fault == "before" {
		w.logf("    ingest crashed before its send")
		return
	}
	env := &envelope.Envelope{Version: 1, Key: e.key, Tenant: simTenant, Provider: simProvider, EventID: e.id, Type: e.typ, Conversation: e.conv, ReceivedAt: w.now}
	body := fmt.Sprintf(`{"id":%q,"n":%d}`, e.id, e.n)
	if e.tier != "" {
		body = fmt.Sprintf(`{"id":%q,"n":%d,"tier":%q}`, e.id, e.n, e.tier)
	}
	env.SetBody([]byte(body))
	b, err := env.Encode()
	if err != nil {
		w.t.Fatalf("encode: %v", err)
	}
	// Every message names its event in attributes too; an offloaded one
	// carries a pointer and the body's size.
	m := &simMsg{body: string(b), group: webhook.GroupID(e.conv, e.key), dedup: webhook.DeduplicationID(e.key), attrs: ingestAttrs(env), event: e, from: byIngest}
	if e.offload {
		ptr := fmt.Sprintf(`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"%s/%d"}]`, e.id, w.ids)
		w.payloads[ptr] = b
		m.body, m.attrs[queue.SizeAttribute] = ptr, fmt.Sprint(len(b))
	}
	// All of its messages (its streams', simdest.go) go in one batch.
	for _, m := range w.streamed(e, m) {
		if sent, ok := w.src.send(w.now, m); ok {
			w.logf("    ingest queued %s as %s (%s)", e.id, sent.id, streamName(sent))
			if !e.queued {
				w.place(e)
			}
		} else {
			w.logf("    ingest send of %s deduplicated by SQS", streamName(m))
		}
	}
	if fault == "after" {
		w.logf("    ingest crashed after its send")
		return
	}
	e.claim = "done"
}

// place gives e the next place in the send order, as a message of its
// event that SQS just accepted: the product must deliver it from now on.
func (w *world) place(e *simEvent) {
	e.queued, e.lostByOwner, e.order, e.placedFor = true, false, w.queuedN, ""
	w.queuedN++
}

// placeOf is what a copy m of an event places it for (simEvent.placedFor).
func placeOf(m *simMsg) string {
	switch s := streamOf(m); {
	case s == (queue.Stream{}):
		return ""
	case s.Destination != "" && !s.Effects:
		return record(m)
	}
	return "-"
}

// queuedBefore reports whether a message of e other than m is still in
// the source queue.
func (w *world) queuedBefore(e *simEvent, m *simMsg) bool {
	for _, o := range w.src.msgs {
		if o != m && o.event == e && w.now.Before(o.sent.Add(w.src.retention)) {
			return true
		}
	}
	return false
}

// invoke is one worker invocation on a batch the event source mapping
// received, with a fault: crash after k AWS calls, deletions lost, or the
// same batch invoked twice.
func (w *world) invoke(fault string, crashAfter int) bool {
	msgs := w.src.receive(w.now, simBatch)
	if len(msgs) == 0 {
		return false
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = fmt.Sprintf("%s(%s #%d %s)", m.id, eventName(m), m.receives, m.from)
	}
	w.logf("worker invoked on %s fault=%s%s", strings.Join(ids, " "), fault, crashSuffix(fault, crashAfter))
	runs := 1
	if fault == "duplicate" {
		runs = 2
	}
	var deletedAt time.Time
	var lost []*simMsg
	recreated := false
	if fault == "deleted" {
		// The operator deletes the queue under the running invocation,
		// which reads its attributes crashAfter seconds later: from 61 s
		// on, after the queue was created again (a delayed invocation, or
		// one that reads the queue again mid-way), so the read answers
		// with the new queue's CreatedTimestamp.
		deletedAt = w.now
		w.logf("    operator deletes the source queue under it (%d messages lost); the instance reads it %ds later", len(w.src.msgs), crashAfter)
		lost = w.dropSource()
		w.srcGone, w.staleUntil = true, w.now.Add(time.Minute)
		w.now = w.now.Add(time.Duration(crashAfter) * time.Second)
		if crashAfter >= 61 {
			w.srcGone, recreated = false, true
			w.createSource(deletedAt)
		}
	}
	for r := 0; r < runs; r++ {
		w.sess = &session{crashAfter: -1, before: w.atCall}
		switch fault {
		case "crash":
			w.sess.crashAfter = crashAfter
		case "lose":
			w.sess.loseAt = crashAfter + 1
		case "deadline":
			// Its time runs out at call crashAfter+1 (if it makes that
			// many), or at a target that never answers.
			w.sess.deadline, w.sess.timeUpAt = w.now.Add(simLambdaTimeout), crashAfter+1
		case "late":
			// Started with less time left than its safety margin.
			w.sess.deadline = w.now.Add(simLate)
		case "recreated":
			w.sess.recreateAt = crashAfter + 1
		}
		ev := events.SQSEvent{}
		for _, m := range msgs {
			ev.Records = append(ev.Records, w.src.record(m))
		}
		failed := w.handle(msgs, ev)
		w.checkHeld(msgs, failed)
		w.checkLate(fault, msgs)
		w.notePaced(msgs)
		w.noteLimit(msgs, failed)
		w.checkWaits(msgs)
		w.checkCutOff()
		if w.sess.crashed || fault != "none" && fault != "lostdelete" {
			// An invocation that crashed, lost an answer, ran out of
			// time, ran twice or lost its queue: the worker may not
			// have decided on its messages.
			for _, m := range msgs {
				if m.receives >= giveUpReceives {
					m.crashedPast++
				}
			}
		}
		if w.sess.crashed {
			w.logf("    invocation crashed after %d AWS calls", w.sess.calls)
			continue
		}
		if fault == "lostdelete" {
			w.logf("    the mapping's deletion is lost")
			for _, m := range msgs {
				// Unless the ledger refused to record its success too
				// (throttled): the deletion was to record it.
				recordFrom := m.sent.Add(w.src.retention - 2*w.hz.margin)
				unrecorded := strings.Contains(w.errs[m.id], "left to the deletion")
				if !failed[m.id] && w.outcomes[m.id] == "processed" && !w.now.Before(recordFrom) && !unrecorded {
					w.answeredDone[m.id] = true
				}
			}
			continue
		}
		for _, m := range msgs {
			if failed[m.id] {
				continue
			}
			if w.src.byReceipt(w.now, m.receipt) == nil {
				continue
			}
			w.src.remove(m)
			// Deleted after it ran: done, unless the worker dead-lettered
			// it (it never learned the forward succeeded: a replay may run
			// it again with its key).
			if !w.dlFrom[m.id] {
				for _, fx := range w.ranForward[m] {
					w.durable(m.event.key, fx, "its message "+m.id+" was deleted")
				}
			}
			// Processed and deleted: the event is done, its sender's
			// later copies are duplicates.
			o := w.outcomes[m.id]
			if o == "skipped_duplicate" && m.event != nil && w.heldBehind(m, msgs, failed) {
				// The worker's second known hole: not done.
				continue
			}
			if rec := record(m); rec != "" && (o == "processed" || o == "skipped_duplicate") && m.event != nil {
				if _, dead := m.event.streamDead[rec]; !dead && m.event.streamDone[rec] == "" {
					m.event.streamDone[rec], m.event.doneAt[rec] = m.id, w.now
				}
				continue
			}
			if (o == "processed" || o == "skipped_duplicate") && m.event != nil && !m.event.dead && m.event.done == "" {
				m.event.done, m.event.doneAt[""] = m.id, w.now
			}
		}
	}
	w.sess = nil
	w.forgetPlaces(w.lostUnder)
	w.lostUnder = nil
	if fault == "deleted" {
		w.srcGone = false
		w.forgetPlaces(lost)
		if !recreated {
			w.createSource(deletedAt)
		}
	}
	return true
}

// simRetry is the worker's backoff: its jitter fixed, so that a retry's
// delay is known.
var simRetry = worker.Retry{Jitter: func() float64 { return 0.5 }}

// checkWaits checks, once an invocation answered, the retention rule of a
// message waiting behind a failure of its conversation (docs/reliability.md,
// the horizons): one that would wait until past its retention's end less
// the margin is dead-lettered with its reason, never left waiting, since
// SQS deletes it unseen at that end if nothing else gives up first. Behind
// a message whose effect the ledger showed in flight under its own receive
// (a concurrent copy of the batch, as the worker takes it), it may wait
// past that point, since the copy decides, but comes back a minute before
// SQS would delete it. (A clock that moved under the invocation after the
// worker decided is not checked.)
func (w *world) checkWaits(msgs []*simMsg) {
	if w.sess.jumped {
		return
	}
	copied := false
	for _, m := range msgs {
		h, ok := w.sess.hidden[m]
		end, gone := m.sent.Add(w.hz.retention-w.hz.margin), m.sent.Add(w.hz.retention)
		switch {
		case !ok || w.outcomes[m.id] != "blocked":
		case copied && h.until.After(gone.Add(-time.Minute)):
			w.fail("message %s of %s waits behind a concurrent copy of its batch until %s, less than a minute before SQS deletes it (%s)",
				m.id, eventName(m), h.until.Format(time.RFC3339), gone.Format(time.RFC3339))
		case !copied && !h.until.Before(end):
			w.fail("message %s of %s waits behind a failure of its conversation until %s, not before its retention's end less the margin (%s): it must be dead-lettered with its reason (SQS deletes it at %s)",
				m.id, eventName(m), h.until.Format(time.RFC3339), end.Format(time.RFC3339), gone.Format(time.RFC3339))
		}
		copied = copied || strings.Contains(w.errs[m.id], ledger.ErrInFlight.Error())
	}
}

// checkCutOff checks what the worker does with a message whose effect the
// cut-off left running (world.straggle), in an invocation that ended with
// every call landed and answered, the attempt counts written: it is a
// failed attempt (docs/architecture.md), counted, so that an effect that
// hangs every time ends in the DLQ with its reason after MaxAttempts and
// its log line says which attempt failed, and retried like a transient
// failure, after the backoff of its count of attempts, never sooner: a
// target that hangs is not called again at a first attempt's pace.
func (w *world) checkCutOff() {
	if !w.sess.clean() || w.mode["ledger/FailedAttempt"] == "throttled" {
		return
	}
	for _, m := range w.sess.straggled {
		m.count(m.receives)
		n := len(m.attempts)
		if got := w.attemptOf[m.id]; got < n {
			w.fail("message %s of %s, still running at the cut-off in its attempt %d, is reported %s at attempt %d: its attempt was not counted",
				m.id, eventName(m), n, w.outcomes[m.id], got)
		}
		if h, ok := w.sess.hidden[m]; ok && h.d < simRetry.Delay(n, 0) {
			w.fail("message %s of %s, still running at the cut-off in its attempt %d, is retried after %s, sooner than the backoff of that attempt (%s)",
				m.id, eventName(m), n, h.d, simRetry.Delay(n, 0))
		}
	}
}

// noteLimit checks the attempt limit: a message whose count of
// maxAttempts or more the worker was answered in this receive is
// dead-lettered, never left to come back for another attempt, when the
// invocation ended (not crashed) with every AWS answer heard (where one
// was lost, the worker may not know its dead letter landed).
func (w *world) noteLimit(msgs []*simMsg, failed map[string]bool) {
	if w.sess.crashed || w.sess.loseAt > 0 && w.sess.calls >= w.sess.loseAt {
		return
	}
	for _, m := range msgs {
		if r, ok := w.learned[m.id]; !ok || r != m.receives {
			continue
		}
		// Retried as an attempt, not because the dead letter could not be
		// sent (deadLetter's rule: nothing is dropped).
		if failed[m.id] && !w.dlFrom[m.id] && w.outcomes[m.id] == "retried" && !strings.Contains(w.errs[m.id], "dead-letter") {
			w.violate("message %s of %s is left to come back (receive %d) though the worker was answered its count of %d attempts: the attempt limit is %d", m.id, eventName(m), m.receives, maxAttempts, maxAttempts)
		}
	}
}

// heldBehind reports whether m, deleted as a copy of a done event, is the
// worker's second known hole (not fixed yet, docs/reliability.md): an
// earlier message of its batch holds its event's claim unfinished and
// failed (it stays queued), and m, dead-lettered behind it near its
// retention's end, was taken for a later copy of a done event (the ledger
// counts an earlier message's claim as done, as if that message had left
// the queue). The event is not done: the earlier message still carries
// it. It counts and logs it.
func (w *world) heldBehind(m *simMsg, batch []*simMsg, failed map[string]bool) bool {
	if !knownHoles {
		return false
	}
	for _, o := range batch {
		if o == m {
			return false
		}
		if o.event == m.event && failed[o.id] {
			w.logf("    KNOWN HOLE: %s of %s deleted as a copy of a done event, while %s of its batch holds it unfinished", m.id, m.event.id, o.id)
			if w.tally != nil {
				w.tally.known.Add(1)
			}
			return true
		}
	}
	return false
}

func eventName(m *simMsg) string {
	if m.event == nil {
		return "?"
	}
	return m.event.id
}

func crashSuffix(fault string, k int) string {
	switch fault {
	case "crash":
		return fmt.Sprintf(" after %d calls", k)
	case "lose":
		return fmt.Sprintf(": the answer to call %d is lost", k+1)
	case "deadline":
		return fmt.Sprintf(": its time runs out at call %d", k+1)
	case "recreated":
		return fmt.Sprintf(": the queue is deleted and created again before call %d", k+1)
	}
	return ""
}

// handle runs the worker one message group at a time in batch order (the
// simulation's receive returns one group per batch, so its runs are
// deterministic) and returns the messages reported failed.
func (w *world) handle(msgs []*simMsg, ev events.SQSEvent) map[string]bool {
	w.ranForward = map[*simMsg][]string{}
	w.pacedOnly, w.attempted, w.handlerOK = map[string]bool{}, map[string]bool{}, map[string]bool{}
	// Target calls are attributed to the message whose handler runs
	// (worker.Event.MessageID); a group's messages run in order.
	w.batch, w.cur, w.dlFrom = map[string]*simMsg{}, nil, map[string]bool{}
	for _, m := range msgs {
		w.batch[m.id] = m
	}
	w.logs.Reset()
	ctx := context.Background()
	if !w.sess.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, w.sess.deadline)
		defer cancel()
		w.sess.cancel = cancel
	}
	resp, err := w.handler.Handle(ctx, ev)
	if err != nil {
		w.t.Fatalf("Handle returned %v", err)
	}
	w.curEv = nil
	if w.broken != "" {
		w.fail("%s", w.broken)
	}
	// (A failed S3 read leaves the event unknown to the log line.)
	w.readLogs(!w.sess.crashed && w.sess.loseAt == 0 && !w.sess.failedCall)
	w.checkPaced()
	if w.broken != "" {
		w.fail("%s", w.broken)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var out []string
	for _, m := range msgs {
		s := "done"
		if failed[m.id] {
			s = "failed"
		}
		out = append(out, m.id+" "+s)
	}
	w.logf("    worker answers: %s", strings.Join(out, ", "))
	return failed
}

// readLogs reads each message's outcome from the invocation's log lines
// and, when check, verifies that every line names its event (an offloaded
// body included), so an operator can find it.
func (w *world) readLogs(check bool) {
	w.outcomes, w.errs, w.attemptOf = map[string]string{}, map[string]string{}, map[string]int{}
	for _, line := range bytes.Split(w.logs.Bytes(), []byte("\n")) {
		var l struct {
			MessageID, EventID, TenantID, Outcome, Error string
			Attempt                                      int
		}
		if json.Unmarshal(line, &l) != nil || l.MessageID == "" {
			continue
		}
		w.outcomes[l.MessageID] = l.Outcome
		w.errs[l.MessageID] = l.Error
		w.attemptOf[l.MessageID] = l.Attempt
		if !check {
			continue
		}
		w.checkFilteredOutcome(l.MessageID, l.Outcome)
		// (A body the worker could not read leaves its event unknown to
		// the line.)
		if m := w.batch[l.MessageID]; m != nil && m.event != nil && w.readable(m.body) == "" && (l.EventID != m.event.id || l.TenantID != simTenant) {
			w.violate("the %s line of message %s names event %q of tenant %q, want %s", l.Outcome, l.MessageID, l.EventID, l.TenantID, m.event.id)
		}
	}
}

// advance moves the clock by d as a continuously polling event source
// mapping would see it: every message that becomes visible meanwhile is
// received and handled, without faults.
func (w *world) advance(d time.Duration) {
	end := w.now.Add(d)
	w.logf("clock advances %s", d)
	for guard := 0; ; guard++ {
		if guard > 2000 {
			w.t.Fatalf("advance: no quiescence")
		}
		for i := 0; i < 50; i++ {
			fault, k := "none", -1
			if w.drainFault != nil {
				fault, k = w.drainFault()
			}
			if !w.invoke(fault, k) {
				break
			}
		}
		next, ok := w.src.nextChange(w.now)
		if !ok || next.After(end) {
			w.now = end
			w.src.expire(w.now)
			w.src.dlq.expire(w.now)
			w.noteExpired()
			w.retriesDue()
			return
		}
		w.now = next
		w.src.expire(w.now)
		w.noteExpired()
	}
}

// outage moves the clock by up to d while the worker takes nothing (its
// mapping disabled, its deploys failing): a backlog grows old. It ends
// when the oldest message queued comes within the worker's margin of its
// retention's end, where the worker must take it again, the design's
// premise (the margin outlasts every receive a message can get). It
// reports false when that time has come already.
func (w *world) outage(d time.Duration) bool {
	end := w.now.Add(d)
	for _, m := range w.src.msgs {
		if at := m.sent.Add(w.hz.retention - w.hz.margin); at.Before(end) {
			end = at
		}
	}
	if !end.After(w.now) {
		return false
	}
	w.logf("worker down for %s: nothing is received", end.Sub(w.now))
	w.now = end
	w.src.expire(w.now)
	w.src.dlq.expire(w.now)
	w.noteExpired()
	return true
}

func (w *world) noteExpired() {
	for _, m := range w.src.expired {
		w.logf("    SQS deleted %s (%s) at the end of its retention", m.id, eventName(m))
	}
	w.src.expired = nil
}

// replay moves the dead letters back to the source queue as tool does:
// scripts/replay (the real redrive, world.redrive), AWS's move task (every
// dead letter, attributes kept, new message ids), or a hand re-send of
// every dead letter's body alone, with the pointer's size, or with the
// event's attributes (the size, when a pointer, and its identity). copies
// is how many times each dead letter is sent (a hand re-send made twice:
// two messages of one body, neither marked); leave keeps the dead letters
// in the DLQ (a hand re-send that deletes nothing: a later replay sends
// their bodies again).
func (w *world) replay(tool provenance, copies int, leave bool) {
	if tool == byReplay {
		w.redrive("none", -1, true, nil)
		return
	}
	w.src.dlq.expire(w.now)
	w.replayOf(w.src.dlq.msgs, tool, copies, leave)
}

// replayOf re-sends the dead letters msgs by hand with tool, copies times
// each, and deletes them from the DLQ unless leave.
func (w *world) replayOf(msgs []*simMsg, tool provenance, copies int, leave bool) {
	dlq := w.src.dlq
	if len(msgs) == 0 {
		return
	}
	kept := ""
	if leave {
		kept = ", and leaves them in the DLQ"
	}
	w.logf("operator replays %d dead letters with %s, %d times each%s", len(msgs), tool, copies, kept)
	for _, m := range slices.Clone(msgs) {
		for c := range copies {
			w.resend(m, tool, fmt.Sprintf("%s-%s-%d", m.id, tool, c))
		}
		// The event stays dead-lettered until the replay runs (claims
		// one of its records past its dead mark: world.claimed).
		if !leave {
			dlq.remove(m)
		}
	}
}

// resend sends dead letter m's body back to the source queue with tool,
// on its original group, with the attributes the tool keeps, under
// deduplication id dedup.
func (w *world) resend(m *simMsg, tool provenance, dedup string) {
	attrs := map[string]string{}
	switch tool {
	case byMove:
		maps.Copy(attrs, m.attrs)
	case byHandSize:
		keep(attrs, m.attrs, queue.SizeAttribute)
	case byHandEvent:
		keep(attrs, m.attrs, eventAttrs...)
	}
	if len(w.dests) >= 2 && !resendWithoutStream {
		keep(attrs, m.attrs, queue.AttrStream)
	}
	group := m.group
	if g := m.attrs[worker.AttrGroupID]; g != "" {
		group = g
	}
	w.sendBack(w.src, &simMsg{body: m.body, group: group, dedup: dedup, attrs: attrs, event: m.event, from: tool}, m.id)
}

// save is the operator's answer to the watch's dead-letters-expiring
// alert ("replay redrive once fixed, or save them", docs/operations.md):
// the dead letters' bodies and attributes are kept outside AWS and their
// copies in the DLQ deleted (SQS deletes them at its retention's end
// anyway). It reports false when the DLQ holds none.
func (w *world) save() bool {
	dlq := w.src.dlq
	dlq.expire(w.now)
	if len(dlq.msgs) == 0 {
		return false
	}
	w.logf("operator saves the %d dead letters and deletes them from the DLQ", len(dlq.msgs))
	w.saved, w.savedAt = slices.Clone(dlq.msgs), w.now
	dlq.msgs = nil
	return true
}

// resendSaved sends the saved dead letters back by hand with tool, days
// or weeks after they were saved: an event may by then be older than the
// ledger remembers its effects.
func (w *world) resendSaved(tool provenance) {
	w.logf("operator re-sends the %d dead letters saved %s ago, with %s", len(w.saved), w.now.Sub(w.savedAt), tool)
	for _, m := range w.saved {
		w.resend(m, tool, m.id+"-saved")
	}
	w.saved = nil
}

// sendBack sends nm, a copy of dead letter of, to the source queue q.
func (w *world) sendBack(q *fifo, nm *simMsg, of string) (*simMsg, bool) {
	sent, ok := q.send(w.now, nm)
	if !ok {
		w.logf("    %s → deduplicated by SQS", of)
		return nm, false
	}
	w.logf("    %s → %s", of, sent.id)
	// An event never applied takes the next place in the send order, even
	// where a re-created queue cleared its old one, unless a copy sent
	// before (another replay of it) is still queued: that one may apply it
	// first. An applied event keeps its first place.
	if e := sent.event; e != nil && !e.applied && !w.queuedBefore(e, sent) {
		w.place(e)
		e.placedFor = placeOf(sent)
	} else if e != nil {
		e.lostByOwner = false
	}
	return sent, true
}

// redriveBudget is the redrive's Options.Budget: far more than a run
// takes, so ErrBudget means a run that would not end.
const redriveBudget = 24 * time.Hour

// redrive runs scripts/replay's redrive, the real replay.Replayer, over the
// twins (simRedrive): a second after the operator decides, it moves what
// was dead-lettered before it started. Its own calls may fail as fault
// says ("crash" after k calls, "lose" the answer to call k+1); payloads
// gives it the payload bucket; between, when set, runs the world's actions
// before each receive after the first and each deletion, so the worker
// runs and dead-letters again while the redrive runs. Every run must end
// (no ErrBudget), in at most two receives per message dead-lettered before
// it started, plus two.
func (w *world) redrive(fault string, k int, payloads bool, between func(where string)) {
	w.now = w.now.Add(time.Second)
	w.src.expire(w.now)
	w.src.dlq.expire(w.now)
	w.noteExpired()
	r := &simRedrive{w: w, sess: &session{crashAfter: -1}, start: w.now, payloads: payloads,
		moved: map[string]*simMsg{}, events: map[streamOfEvent]string{}, between: between}
	switch fault {
	case "crash":
		r.sess.crashAfter = k
	case "lose":
		r.sess.loseAt = k + 1
	}
	if r.between == nil {
		r.between = func(string) {}
	}
	for _, m := range w.src.dlq.msgs {
		if m.sent.Before(r.start) {
			r.before++
		}
	}
	w.logf("operator redrives with scripts/replay: %d dead letters before it (fault=%s%s, bucket %v)", r.before, fault, crashSuffix(fault, k), payloads)
	items, err := replay.New(r, r, replay.Options{Now: w.clock, Wait: time.Second, Budget: redriveBudget, Payloads: payloadsOf(w, payloads)}).
		Redrive(context.Background(), w.src.dlq.url(), w.src.url(), replay.Filter{}, false)
	held := 0
	for _, it := range items {
		if it.Status == replay.StatusHeld {
			held++
		}
	}
	w.logf("    the redrive ends after %d receives: %d moved, %d held, error %v", r.receives, len(r.moved), held, err)
	switch {
	case errors.Is(err, replay.ErrBudget) || errors.Is(err, errRunaway):
		w.fail("the redrive does not end: %d receives (%v)", r.receives, err)
	case r.receives > 2*r.before+2:
		w.fail("the redrive took %d receives for %d dead letters from before its start", r.receives, r.before)
	}
}

// payloadsOf is the payload bucket as the redrive reads it, when given.
func payloadsOf(w *world, given bool) interface {
	Get(ctx context.Context, pointerBody string) ([]byte, error)
} {
	if !given {
		return nil
	}
	return simPayloads{w}
}

// keep copies the attributes names of from that it has into to.
func keep(to, from map[string]string, names ...string) {
	for _, name := range names {
		if v, ok := from[name]; ok {
			to[name] = v
		}
	}
}

// recreate deletes the source queue and creates it again under its name
// (an operator's act): its messages are gone, sequence numbers restart.
func (w *world) recreate() {
	w.logf("operator deletes and re-creates the source queue (%d messages lost)", len(w.src.msgs))
	w.forgetPlaces(w.dropSource())
	w.createSource(w.now)
}

// dropSource is the deletion of the source queue: its messages are gone
// (returned), and with them what their deletions completed.
func (w *world) dropSource() []*simMsg {
	// A forward's completion implied by its message's deletion was only
	// readable in the deleted queue: an event its sender delivers again
	// forwards again, under the same keys (docs/ledger.md).
	// So was an event's being done (its record claimed by a message the
	// deletion completed).
	for _, e := range w.events {
		maps.DeleteFunc(e.durable, func(fx, why string) bool { return isForward(fx) && strings.Contains(why, "was deleted") })
		e.done = ""
		clear(e.streamDone)
	}
	lost := w.src.msgs
	w.src.msgs = nil
	return lost
}

// forgetPlaces forgets the places of the events whose messages were lost
// with their queue, once no invocation still runs them: if its sender
// delivers one again, it is queued anew, in its new place. An event
// applied before keeps its place where it was applied.
func (w *world) forgetPlaces(lost []*simMsg) {
	for _, m := range lost {
		// (A copy its sender sent since, into the new queue, keeps it.)
		if m.event != nil && !w.queuedBefore(m.event, nil) {
			m.event.lostByOwner = true
			m.event.queued = m.event.applied
			m.event.partlyLost = m.event.partlyLost || m.event.applied
		}
	}
}

// createSource creates the source queue again, 61 s after its deletion at
// deletedAt at the earliest (SQS: wait 60 s before re-creating).
func (w *world) createSource(deletedAt time.Time) {
	if at := deletedAt.Add(61 * time.Second); w.now.Before(at) {
		w.now = at
	}
	dlq := w.src.dlq
	w.src = newFIFO("hp-acme", w.now, &w.ids)
	w.src.dlq, w.src.maxRecv, w.src.retention = dlq, worker.MinMaxReceiveCount(maxAttempts), w.hz.retention
	w.logf("    the source queue exists again (created %s)", w.now.Format("15:04:05"))
	w.senderRetries()
}

// --- invariants ---

// check verifies after every step that every queued event is done, or
// dead-lettered by the worker with a reason, or still queued: never gone
// silently (expired, or moved to the DLQ by SQS without a reason).
func (w *world) check() {
	w.steps++
	w.checkStreams()
	for _, e := range w.events {
		if !e.queued || e.lostByOwner {
			continue
		}
		if !slices.ContainsFunc(w.expected(e), func(fx string) bool { return e.runs[fx] == 0 }) {
			continue // every effect reached the target: nothing is lost
		}
		where := w.whereIs(e)
		if where == "queued" || where == "dead-lettered" {
			continue
		}
		w.violate("%s is not done and is %s", e.id, where)
	}
}

func (w *world) whereIs(e *simEvent) string {
	for _, m := range w.src.msgs {
		if m.event == e && w.now.Before(m.sent.Add(w.src.retention)) {
			return "queued"
		}
	}
	reasonless := false
	for _, m := range w.src.dlq.msgs {
		if m.event == e {
			if m.attrs[worker.AttrReason] != "" || w.pacedPast(m) || w.crashedPast(m) {
				return "dead-lettered"
			}
			reasonless = true
		}
	}
	if reasonless {
		return "in the DLQ without a reason (moved by SQS after maxReceiveCount receives)"
	}
	if e.dead || e.deadReason != "" || e.streamDeadOnce {
		return "dead-lettered" // its dead letter's own retention ended: the operator's
	}
	return "gone (expired from the queue, or deleted without being done)"
}

// simBatch is the event source mapping's batch: at most 10 messages.
const simBatch = 10

// giveUpReceives is the receive from which the worker gives up on a
// message at its next failure or wait for a rate (decide: 10 ×
// MaxAttempts; a wait for a paused destination 10 receives later).
const giveUpReceives = 10 * maxAttempts

// crashedPast reports whether m, moved to the DLQ by SQS without a
// reason, had more of its receives from giveUpReceives on end in faulted
// invocations (crashed, an answer lost, out of time, run twice, the queue
// deleted under it) than the queue's maxReceiveCount leaves for them: from
// there every failure of m gives it up at once, and a wait for a paused
// destination does within 10 more receives (README: the crash bound, 10 at
// the minimum maxReceiveCount and the defaults). The worker never heard
// how those receives ended, so SQS's move is the documented way out.
func (w *world) crashedPast(m *simMsg) bool {
	if !m.reasonless || m.crashedPast <= w.src.maxRecv-giveUpReceives-simBatch {
		return false
	}
	if !m.hole {
		m.hole = true // logged once, as pacedPast does
		if m.event != nil && m.event.deadReason == "" {
			m.event.deadReason = "moved by SQS after its maxReceiveCount (crashed receives past the bound)"
		}
		w.logf("    %s of %s moved to the DLQ by SQS after %d receives, %d of them in faulted invocations past the worker's give-up receive", m.id, eventName(m), m.receives, m.crashedPast)
	}
	return true
}

// --- the test ---

// simTally counts what one phase of TestSimulation ran: the replay of the
// stored failures, or the search.
type simTally struct {
	what string // how a violation's step count reads: "explored", …
	// runs of the property, and those that reached its end (a stored
	// failure stops early when its draws end at the violation it found on
	// an older worker, or no longer fit the simulation).
	runs, ended int
	// known counts the steps of the worker's known holes (world.knownHole,
	// world.heldBehind).
	known atomic.Int64
	// steps of the runs that ended; firstAt, the count at the first
	// violation (shrinking replays shorter histories afterwards). A
	// violation may be found on a handler's goroutine.
	steps, firstAt atomic.Int64
}

// knownNote says how often the known hole was run, if it was.
func (t *simTally) knownNote() string {
	if n := t.known.Load(); n > 0 {
		return fmt.Sprintf(" (%d steps of the worker's known holes: a replay dead-lettered before its claim runs when redelivered; a copy dead-lettered behind an earlier one of its event that failed in its batch is deleted as done; a message paced again and again is moved to the DLQ by SQS without a reason; a copy without its stream of a tenant with streams runs past a stream's completion or its own dead mark)", n)
	}
	return ""
}

func (t *simTally) first(n int64) int64 {
	t.firstAt.CompareAndSwap(0, n)
	return t.firstAt.Load()
}

// simStored holds the failures of past searches kept as regressions:
// rapid's fail files, which TestSimulation/stored replays. A failure the
// search finds is saved in testdata/rapid/TestSimulation_search (the next
// search replays it first); move the file here to keep it.
var simStored = filepath.Join("testdata", "rapid", "TestSimulation")

// simDestinationsFile begins the name of each stored failure whose run
// draws the tenant's outbound configuration (world.drawDestinations): the
// failures stored before the simulation had destinations replay the
// legacy targetUrl's draws.
const simDestinationsFile = "destinations"

// simDeadlinesFile is in the name of each stored failure whose run draws
// invocations with a deadline, a queue re-created under an invocation
// (and the sender's retries into the new queue: world.senderRetries),
// custom effects failing with a long Retry-After and
// claims whose answers are lost: the failures stored before replay the
// draws without them.
const simDeadlinesFile = "deadlines"

// simSavedFile is in the name of each stored failure whose run draws dead
// letters the operator saves and re-sends by hand later (world.save): the
// failures stored before replay the draws without them.
const simSavedFile = "saved"

// simTwiceFile is in the name of each stored failure whose run draws the
// hand re-send made twice as an action of its own (besides the replay's
// draw of it): one body as two unmarked copies, the case the ledger's
// resent rule exists for, which the other actions make rare; and an
// ingest fault for each of the sender's retries into a re-created queue,
// so a later retry brings the event to the new queue again.
const simTwiceFile = "twice"

// maxTwice is the most dead letters the hand re-send made twice takes on.
const maxTwice = 6

// simChecks is the search's number of runs: -rapid.checks when given (make
// simulate), else 750 (make test: about 16,000 steps, ~12 s with -race).
var simChecks = sync.OnceValue(func() string {
	checks := "750"
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "rapid.checks" {
			checks = f.Value.String()
		}
	})
	return checks
})

// setFlag sets one of rapid's flags for the rest of t.
func setFlag(t *testing.T, name, value string) {
	old := flag.Lookup(name).Value.String()
	if err := flag.Set(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set(name, old) })
}

// TestSimulation replays the stored failures, then searches: apart, so
// the search's count of steps explored is its own.
func TestSimulation(t *testing.T) {
	simChecks() // read before the subtests set the flag
	t.Run("stored", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(simStored, "*.fail"))
		if err != nil {
			t.Fatal(err)
		}
		tally := &simTally{what: "of the stored failures"}
		setFlag(t, "rapid.checks", "0") // no new runs
		for _, f := range files {
			setFlag(t, "rapid.failfile", f)
			name := filepath.Base(f)
			rapid.Check(t, simulate(tally, strings.HasPrefix(name, simDestinationsFile), strings.Contains(name, simDeadlinesFile), strings.Contains(name, simSavedFile), strings.Contains(name, simTwiceFile)))
		}
		stale := ""
		if n := len(files) - tally.ended; n > 0 {
			stale = fmt.Sprintf(" (%d stopped early: their draws end where an older worker broke, or no longer fit the simulation)", n)
		}
		t.Logf("stored failures: %d replayed, %d of them to the end%s, %d steps, 0 violations%s", len(files), tally.ended, stale, tally.steps.Load(), tally.knownNote())
	})
	t.Run("search", func(t *testing.T) {
		tally := &simTally{what: "explored"}
		setFlag(t, "rapid.checks", simChecks())
		rapid.Check(t, simulate(tally, true, true, true, true))
		t.Logf("search: %d runs, %d steps explored, 0 violations%s", tally.runs, tally.steps.Load(), tally.knownNote())
	})
}

// simulate is the property rapid checks: one history of random actions
// and faults, the invariants checked after every step.
func simulate(tally *simTally, destinations, deadlines, saved, twice bool) func(*rapid.T) {
	return func(rt *rapid.T) {
		tally.runs++
		w := newWorldOf(rt, rapid.SampledFrom([]horizons{awsHorizons, shortHorizons}).Draw(rt, "horizons"))
		defer close(w.release)
		w.tally = tally
		if destinations {
			w.drawDestinations(rt)
		}
		w.retryIntoNewQueue = deadlines
		convs := []string{"cus_A", "cus_B"}
		nextN := map[string]int{}
		newEvent := func(conv string) *simEvent {
			n := nextN[conv]
			nextN[conv]++
			id := fmt.Sprintf("evt_%s_%d", conv[4:], n)
			kinds := handlerKinds
			if w.dests != nil {
				// A destination's stream forwards whatever the event's
				// handler: its handler includes the forward.
				kinds = handlerKinds[:2]
			}
			e := w.newSimEvent(id, conv, n, rapid.SampledFrom(kinds).Draw(rt, "handler "+id))
			e.offload = rapid.Bool().Draw(rt, "offload "+id)
			if w.dests != nil {
				e.typ = rapid.SampledFrom(simEventTypes).Draw(rt, "type "+id)
				e.tier = rapid.SampledFrom(simTiers).Draw(rt, "tier "+id)
			}
			return e
		}
		// An ingest fault answers the sender 5xx: it retries. A run draws
		// how often: one delivery in five each way, or, in one run of three
		// (with the sender's retries into a new queue), a flaky ingest that
		// leaves half its deliveries unacknowledged after queueing them, so
		// that an event's copies meet in a queue and across a re-creation.
		ingestFaults := []string{"", "", "", "before", "after"}
		if twice && rapid.IntRange(0, 2).Draw(rt, "flaky ingest?") == 0 {
			ingestFaults = []string{"", "before", "after", "after"}
			w.onSchedule = true
		}
		fault := func(name string) string {
			return rapid.SampledFrom(ingestFaults).Draw(rt, name)
		}
		if twice {
			w.senderFault = func() string { return fault("retry into the new queue: ingest fault") }
		}
		// While time passes, one invocation in about twenty has a fault too.
		// A run draws how often its drained invocations fail: one in
		// twenty, or, in one run of three, one in five (a run of bad
		// luck: the uncounted receives and duplicate invocations that the
		// attempt limit and the dead marks must absorb).
		drainOdds := rapid.SampledFrom([]int{20, 20, 5}).Draw(rt, "drain fault odds")
		// A run draws how often the operator re-creates the queue: one
		// draw in ten, or, in one run of three (with the sender's retries
		// into the new queue), one in two: the rules of a queue's
		// incarnations need a re-creation, then the event's copies in
		// both queues.
		recreateOdds := 10
		if twice {
			recreateOdds = rapid.SampledFrom([]int{10, 10, 2}).Draw(rt, "queue re-creation odds")
		}
		w.drainFault = func() (string, int) {
			if rapid.IntRange(1, drainOdds).Draw(rt, "drain fault?") != 1 {
				return "none", -1
			}
			faults := []string{"crash", "lose", "lostdelete", "duplicate"}
			if deadlines {
				faults = append(faults, "deadline", "late")
			}
			return rapid.SampledFrom(faults).Draw(rt, "drain fault"), rapid.IntRange(0, 12).Draw(rt, "drain crash after")
		}
		actions := map[string]func(*rapid.T){
			"new event": func(rt *rapid.T) {
				conv := rapid.SampledFrom(convs).Draw(rt, "conversation")
				// One in eight is a burst: up to a full batch of one
				// conversation, so a failing head holds back nine.
				n := 1
				if rapid.IntRange(0, 7).Draw(rt, "burst?") == 0 {
					n = rapid.IntRange(2, 10).Draw(rt, "burst")
				}
				for range n {
					w.deliver(newEvent(conv), fault("ingest fault"))
				}
			},
			"provider retry": func(rt *rapid.T) {
				if len(w.events) == 0 {
					rt.Skip("no event yet")
				}
				// A sender retries the deliveries it was not answered 2xx
				// for (an ingest fault) until its horizon, and now and then
				// sends an acknowledged one again: three retries in four
				// are of an unacknowledged delivery, when there is one.
				pool := w.events
				if unacked := w.unacknowledged(); len(unacked) > 0 && twice && rapid.IntRange(0, 3).Draw(rt, "an unacknowledged delivery?") != 0 {
					pool = unacked
				}
				e := rapid.SampledFrom(pool).Draw(rt, "event")
				if w.now.Sub(e.first) > retryHorizon {
					rt.Skip("past the sender's retry horizon")
				}
				w.deliver(e, fault("ingest fault"))
			},
			"invoke": func(rt *rapid.T) {
				faults := []string{"none", "crash", "crash", "lose", "lostdelete", "duplicate"}
				if deadlines {
					faults = append(faults, "deadline", "deadline", "late", "recreated")
				}
				f := rapid.SampledFrom(faults).Draw(rt, "fault")
				k := rapid.IntRange(0, 12).Draw(rt, "crash after")
				if !w.invoke(f, k) {
					rt.Skip("nothing visible")
				}
			},
			"target": func(rt *rapid.T) {
				conv := rapid.SampledFrom(convs).Draw(rt, "conversation")
				effect := rapid.SampledFrom(w.targetEffects()).Draw(rt, "effect")
				modes := w.targetModes()
				if deadlines && !isForward(effect) {
					// A forward's Retry-After is a wait (ErrPaced): only a
					// custom effect's failure asks for a counted one.
					modes = append(modes, "transient retry-after")
				}
				mode := rapid.SampledFrom(modes).Draw(rt, "mode")
				w.mode[conv+"/"+effect] = mode
				w.logf("target %s/%s now %q", conv, effect, mode)
			},
			"handler between effects": func(rt *rapid.T) {
				conv := rapid.SampledFrom(convs).Draw(rt, "conversation")
				mode := rapid.SampledFrom([]string{"", "", "transient", "permanent", "lost"}).Draw(rt, "mode")
				w.mode[conv+"/between"] = mode
				w.logf("handlers of %s between two effects now %q", conv, mode)
			},
			"ledger": func(rt *rapid.T) {
				calls := []string{"FailedAttempt", "Complete"}
				if deadlines {
					calls = append(calls, "Claim")
				}
				call := rapid.SampledFrom(calls).Draw(rt, "call")
				modes := []string{"", "throttled"}
				if call == "Claim" {
					// Each claim's first answer lost: the SDK's retry
					// finds the claim landed (ledger.Memory.LoseAnswers).
					modes = []string{"", "lost answers"}
				}
				mode := rapid.SampledFrom(modes).Draw(rt, "mode")
				w.mode["ledger/"+call] = mode
				w.logf("ledger %s now %q", call, mode)
			},
			"advance": func(rt *rapid.T) {
				w.advance(rapid.SampledFrom(w.hz.advances).Draw(rt, "by"))
			},
			"worker outage": func(rt *rapid.T) {
				if !w.outage(rapid.SampledFrom(w.hz.advances).Draw(rt, "for")) {
					rt.Skip("a message is already near its retention's end")
				}
			},
			"payload": func(rt *rapid.T) {
				var offloaded []*simEvent
				for _, e := range w.events {
					if e.offload {
						offloaded = append(offloaded, e)
					}
				}
				if len(offloaded) == 0 {
					rt.Skip("no offloaded event")
				}
				e := rapid.SampledFrom(offloaded).Draw(rt, "event")
				mode := rapid.SampledFrom([]string{"", "denied", "gone"}).Draw(rt, "mode")
				w.s3[e.id] = mode
				w.logf("payload of %s now %q", e.id, mode)
			},
			"replay": func(rt *rapid.T) {
				tool := rapid.SampledFrom([]provenance{byReplay, byMove, byHand, byHandSize, byHandEvent}).Draw(rt, "tool")
				if tool != byReplay {
					copies, keep := 1, false
					if tool != byMove {
						copies = rapid.IntRange(1, 2).Draw(rt, "hand re-sends of each")
						keep = deadlines && rapid.Bool().Draw(rt, "leaves the dead letters")
					}
					w.replay(tool, copies, keep)
					return
				}
				f := rapid.SampledFrom([]string{"none", "none", "crash", "lose"}).Draw(rt, "redrive fault")
				k := rapid.IntRange(0, 8).Draw(rt, "redrive crash after")
				w.redrive(f, k, rapid.Bool().Draw(rt, "redrive reads the bucket"), func(where string) {
					// While the redrive runs, the worker takes what it moved,
					// the target changes its mind, time passes.
					switch rapid.IntRange(0, 5).Draw(rt, "during the redrive, before its "+where) {
					case 0, 1:
						f, k := w.drainFault()
						w.invoke(f, k)
					case 2:
						conv := rapid.SampledFrom(convs).Draw(rt, "conversation")
						mode := rapid.SampledFrom([]string{"", "permanent", "transient"}).Draw(rt, "mode")
						for _, fx := range w.targetEffects() {
							if fx != notify {
								w.mode[conv+"/"+fx] = mode
							}
						}
						w.logf("    target of %s now %q", conv, mode)
					case 3:
						w.advance(rapid.SampledFrom([]time.Duration{time.Second, 30 * time.Second}).Draw(rt, "by"))
					}
				})
			},
			"pause or resume": func(rt *rapid.T) {
				if w.dests == nil {
					rt.Skip("no destinations")
				}
				w.pauseOrResume(rt)
			},
			"recreate queue": func(rt *rapid.T) {
				if rapid.IntRange(1, recreateOdds).Draw(rt, "rarely") != 1 {
					rt.Skip("rare")
				}
				// Between invocations, or under one that reads the
				// deleted queue's attributes up to a minute later and
				// caches them while the new queue's messages arrive, or
				// only after the queue was created again.
				if rapid.Bool().Draw(rt, "under an invocation") && w.invoke("deleted", rapid.IntRange(0, 179).Draw(rt, "read after (s)")) {
					return
				}
				w.recreate()
			},
			"": func(rt *rapid.T) { w.check() },
		}
		if saved {
			// The operator saves the dead letters, then, days or weeks
			// later, re-sends them by hand.
			actions["save or re-send dead letters"] = func(rt *rapid.T) {
				if w.saved == nil {
					if !w.save() {
						rt.Skip("no dead letter")
					}
					return
				}
				w.resendSaved(rapid.SampledFrom([]provenance{byHand, byHandSize, byHandEvent}).Draw(rt, "saved re-sent by"))
			}
		}
		if twice {
			actions["hand re-send made twice"] = func(rt *rapid.T) {
				// Each round may double the dead letters (both copies
				// failing): the operator re-sends a few at a time, the
				// oldest first.
				w.src.dlq.expire(w.now)
				msgs := w.src.dlq.msgs
				if len(msgs) > maxTwice {
					msgs = msgs[:rapid.IntRange(1, maxTwice).Draw(rt, "re-sent twice of the oldest")]
				}
				tool := rapid.SampledFrom([]provenance{byHand, byHandSize, byHandEvent}).Draw(rt, "re-sent twice by")
				w.replayOf(msgs, tool, 2, false)
			}
		}
		rt.Repeat(actions)
		// The end: the target recovers, S3 no longer refuses (an expired
		// payload stays gone) and time passes without faults, so every
		// event must end done or dead-lettered with its reason.
		w.mode, w.drainFault = map[string]string{}, nil
		w.resumeAll()
		maps.DeleteFunc(w.s3, func(_, mode string) bool { return mode == "denied" })
		w.advance(15 * 24 * time.Hour)
		w.check()
		tally.steps.Add(int64(w.steps))
		tally.ended++
		if p := os.Getenv("SIMPROGRESS"); p != "" {
			// The steps explored so far, after every run: a rule broken on
			// purpose that panics a goroutine of the worker ends the test
			// before it reports (scripts/mutate.sh reads it).
			_ = os.WriteFile(p, []byte(fmt.Sprint(tally.steps.Load())), 0o600)
		}
	}
}

// TestSimulationRegressions replays, step by step, the shortest histories
// the search found against f20af5b's worker (issue 28), each of which broke
// an invariant there, and those that showed a mistake of the model.
func TestSimulationRegressions(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name  string
		steps func(w *world, e func(conv string) *simEvent)
	}{
		{"hole 4: a forward that hangs on every attempt ends in the DLQ with its reason", func(w *world, e func(string) *simEvent) {
			w.deliver(e("cus_A"), "")
			w.mode["cus_A/forward"] = "hang"
			w.advance(13 * day)
		}},
		{"hole 1: a dead-lettered message whose invocation crashed after the dead letter does not run again", func(w *world, e func(string) *simEvent) {
			w.deliver(e("cus_B"), "")
			w.mode["cus_B/forward"] = "permanent"
			w.invoke("crash", 6)
			w.mode["cus_B/forward"] = ""
			w.advance(15 * day)
		}},
		{"hole 1: a stray copy after a lost deletion of the dead-lettered message is skipped", func(w *world, e func(string) *simEvent) {
			w.deliver(e("cus_A"), "")
			w.deliver(e("cus_A"), "")
			w.mode["cus_A/charge"] = "permanent"
			w.invoke("lostdelete", -1)
			w.mode["cus_A/charge"] = ""
			w.advance(time.Hour)
		}},
		{"hole 6: a re-created queue's messages are not fenced by a warm instance", func(w *world, e func(string) *simEvent) {
			w.deliver(e("cus_A"), "")
			w.advance(time.Second)
			w.recreate()
			w.deliver(e("cus_A"), "")
			w.advance(day)
		}},
		// The model's own: a replay sent after a queue re-creation cleared
		// its event's place took none, so the events queued after it were
		// reported applied out of order (SEED=4242, rapid seed 146440183).
		{"model: a replay after a queue re-creation takes its place in the send order", func(w *world, e func(string) *simEvent) {
			a0 := e("cus_A")
			w.mode["cus_A/forward"] = "permanent"
			w.deliver(a0, "after")     // its key stays unrecorded: the provider retries
			w.invoke("lostdelete", -1) // dead-lettered; a stray copy stays queued
			w.recreate()               // the stray copy is lost with the queue
			w.mode["cus_A/forward"] = ""
			w.replay(byReplay, 1, false) // evt_A_0 is sent again, first
			w.deliver(e("cus_A"), "")    // then evt_A_1
			w.deliver(a0, "")            // and the provider's retry of evt_A_0
			w.advance(time.Hour)
		}},
		// And a replay sent while an earlier copy of its event was still
		// queued must not move the event behind the ones sent between
		// (SEED=2, rapid seed 63163182).
		{"model: a replay behind a queued copy of its event leaves the event its place", func(w *world, e func(string) *simEvent) {
			w.deliver(e("cus_A"), "")
			w.mode["cus_A/forward"] = "permanent"
			w.invoke("crash", 6)       // dead-lettered, and again when it comes back
			w.advance(7 * time.Minute) // (its first dead letter's mark was lost)
			w.mode["cus_A/forward"] = "transient"
			w.replay(byMove, 1, false) // two copies of evt_A_0
			w.deliver(e("cus_A"), "")
			w.advance(13 * time.Second)  // the first copy is dead-lettered; the second waits
			w.replay(byReplay, 1, false) // a third copy, behind evt_A_1
			w.mode["cus_A/forward"] = ""
			w.advance(time.Hour) // the second copy applies evt_A_0, then evt_A_1
		}},
		// Issue 34's hole 9: the redrive took each copy the worker
		// dead-lettered again during its run for a new dead letter.
		{"hole 9: a redrive while the target still refuses the event moves it once and ends", func(w *world, e func(string) *simEvent) {
			w.deliver(e("cus_A"), "")
			w.mode["cus_A/forward"] = "permanent"
			w.advance(time.Hour)
			w.redrive("none", -1, false, func(string) { w.invoke("none", -1) })
		}},
		// Issue 45's item 3: a message of a deleted queue, handled after the
		// queue was created again, was labelled with the new incarnation,
		// and its failed claim (its old queue's higher SequenceNumber)
		// fenced the event's copy in the new queue: superseded, lost.
		{"a message of a deleted queue handled after its re-creation does not fence its event's copy in the new queue", func(w *world, e func(string) *simEvent) {
			w.deliver(e("cus_B"), "")
			w.deliver(e("cus_C"), "")
			w.advance(time.Hour) // the old queue numbers on past the new one's first
			a := e("cus_A")
			w.deliver(a, "after") // queued; the ingest's completion lost: the provider retries
			w.mode["cus_A/forward"] = "transient"
			w.invoke("deleted", 90) // handled after the queue was created again; the forward fails
			w.mode["cus_A/forward"] = ""
			w.advance(time.Minute)
			w.deliver(a, "") // the provider's retry, queued in the new queue
			w.advance(time.Hour)
		}},
		// Issue 45's item 1: the redelivery took its own unfinished forward
		// for an interrupted run and dead-lettered the done event.
		{"a done message whose deletion was lost near its retention's end is not dead-lettered when it comes back", func(w *world, e func(string) *simEvent) {
			w.deliver(e("cus_A"), "")
			w.outage(13 * day)         // up to its retention's end less the margin
			w.invoke("lostdelete", -1) // processed, answered done, not deleted
			w.advance(time.Hour)       // back after its visibility timeout
		}},
		// Issue 45's hole 12 (SEED=3, 362,568 steps): the event's forward
		// completed in a queue deleted since; in the new queue a copy
		// finished the event without taking its record into the new
		// queue's series, so a later copy that failed was dead-lettered: a
		// done event with a second outcome.
		{"hole 12: a done event in the re-created queue is not dead-lettered by a later copy", func(w *world, e func(string) *simEvent) {
			a := e("cus_A")
			w.deliver(a, "after") // queued; the ingest's completion lost: the provider retries
			w.mode["cus_A/charge"] = "transient"
			w.advance(time.Second) // forwarded; the charge failed: retried
			w.recreate()           // the message is lost with its queue
			w.mode["cus_A/charge"] = ""
			w.deliver(a, "after")  // the provider's retry, queued in the new queue
			w.advance(time.Minute) // charged: done in the new queue
			w.mode["cus_A/between"] = "permanent"
			w.advance(6 * time.Minute) // past SQS's deduplication window
			w.deliver(a, "")           // the provider's last retry, refused by its handler
			w.advance(time.Hour)
		}},
		{"hole 3: replays on days 13, 26 and 39 never run a completed charge again", func(w *world, e func(string) *simEvent) {
			w.deliver(e("cus_A"), "")
			w.mode["cus_A/forward"] = "transient"
			w.advance(13 * day)
			for range 3 {
				w.replay(byReplay, 1, false)
				w.advance(13 * day)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			n := 0
			newEvent := func(conv string) *simEvent {
				id := fmt.Sprintf("evt_%s_%d", conv[4:], n)
				n++
				return w.newSimEvent(id, conv, n, []string{worker.ForwardEffect, charge})
			}
			tt.steps(w, newEvent)
			w.check()
			w.mode = map[string]string{}
			w.advance(15 * day)
			w.check()
			if os.Getenv("SIMDEBUG") != "" {
				t.Log(strings.Join(w.history, "\n"))
			}
		})
	}
}
