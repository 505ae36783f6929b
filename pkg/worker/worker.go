package worker

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/ratelimit"
)

// sender puts a message on a FIFO queue (the DLQ) and returns its id.
type sender interface {
	Send(ctx context.Context, url string, m queue.Message) (string, error)
}

// payloadReader reads the body a pointer message stands for (queue.Payloads).
type payloadReader interface {
	Get(ctx context.Context, pointerBody string) ([]byte, error)
}

// visibilityAPI changes the visibility timeout of received messages.
type visibilityAPI interface {
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// queueAttributes reads a queue's attributes (the SQS client).
type queueAttributes interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Defaults of Config.
const (
	DefaultSafetyMargin  = 5 * time.Second
	DefaultFinishTimeout = 2 * time.Second
	// DefaultEffectTimeout matches forward.DefaultTimeout.
	DefaultEffectTimeout = 10 * time.Second
	// DefaultQueueRetention is SQS's maximum, the tenant queues' setting.
	DefaultQueueRetention = 14 * 24 * time.Hour
	// DefaultExpiryMargin is kept free at the end of a message's
	// retention: a conversation's head, failing or waiting, is
	// dead-lettered before it (nearEnd) whatever its horizon and attempts,
	// so the messages behind it, which SQS hands out only after it and
	// which are no older, reach the worker before their retention ends,
	// and are dead-lettered if they are that old.
	DefaultExpiryMargin = 48 * time.Hour
	// DefaultReplayMargin covers the ingest's dedup window: a later copy of
	// an event (the ingest's second send) carries a later receivedAt than
	// the copy whose effects completed first.
	DefaultReplayMargin = 7 * 24 * time.Hour
)

// Config holds the handler's dependencies. Ledger, Handlers, DLQ and
// Visibility are required.
type Config struct {
	Ledger   ledgerStore
	Handlers *Registry
	// DLQ sends dead letters (queue.SQS).
	DLQ sender
	// Visibility changes the visibility of retried messages (the SQS client).
	Visibility visibilityAPI
	// Queues reads each source queue's CreatedTimestamp at most once a
	// minute per instance (the SQS client), so that fencing tokens of a queue deleted and
	// created again under the same name never fence the new one
	// (ledger.Fence.Queue). Without it tokens compare across incarnations.
	Queues queueAttributes
	// Payloads reads the bodies ingest offloaded to S3 (messages carrying
	// queue.SizeAttribute); without it such a message is dead-lettered.
	Payloads payloadReader
	// QueueURLTemplate gives the scheme and host of queue URLs derived from
	// an event's eventSourceARN (see esm.QueueURL); empty means the
	// public SQS endpoint.
	QueueURLTemplate string
	Retry            Retry
	// MaxAttempts, when > 0, dead-letters a message whose attempt-th
	// attempt failed transiently, with the last error as the reason.
	// Attempts are counted in the ledger (FailedAttempt), not taken from
	// ApproximateReceiveCount: a message received behind a failing one of
	// its conversation is not attempted and uses up nothing. Set the
	// queue's maxReceiveCount to at least MinMaxReceiveCount(MaxAttempts)
	// so that SQS's redrive, which records no reason, never fires first.
	MaxAttempts int
	// SafetyMargin is kept free before the Lambda deadline for completing
	// ledger writes, dead-lettering and visibility changes.
	SafetyMargin time.Duration
	// FinishTimeout bounds each of those calls (≤ SafetyMargin).
	FinishTimeout time.Duration
	// CompleteEffects writes the forward effect's completion as soon as it
	// ran too (one more write per event); custom effects (Event.Once)
	// always do. Without it the forward's message deletion completes it
	// (except within twice ExpiryMargin of its retention's end, where the
	// worker writes it: docs/ledger.md), and a message whose deletion was lost, or
	// a batch invoked twice, forwards again under the same Idempotency-Key
	// and webhook-id, which the receiver deduplicates.
	CompleteEffects bool
	// EffectTimeout bounds each custom effect (Event.Once): its context
	// ends then, and an effect starts only while that much is left before
	// the work deadline, so none is cut off by the invocation's end.
	EffectTimeout time.Duration
	// QueueRetention is the source queues' MessageRetentionPeriod, and
	// ExpiryMargin how long before its end a message that is still
	// failing or waiting is dead-lettered with ErrExpiring (SQS would
	// delete it without a trace).
	QueueRetention time.Duration
	ExpiryMargin   time.Duration
	// LedgerRetention is how long the ledger keeps effect records
	// (ledger.Options.Retention). A message whose event was received more
	// than LedgerRetention less DefaultReplayMargin ago (a dead letter
	// replayed again and again) is dead-lettered with ErrReplayTooOld
	// instead of run: its completed effects may have been forgotten.
	LedgerRetention time.Duration
	// Lease is the effect lease when the context has no deadline (a local
	// poller); under Lambda a lease lasts until the invocation's deadline.
	Lease time.Duration
	// Limiter paces deliveries to destinations with a rate, and custom
	// effects that take from a named limit (Event.Pace), across every
	// invocation (ratelimit.DynamoDB). Default: one in this process only
	// (ratelimit.Memory), for tests and single-process pollers.
	Limiter limiter
	// Destinations holds the destinations' pauses and failure streaks
	// (destination.Cache over destination.DynamoDB): a paused
	// destination's messages wait (ErrPaused), and one that fails for
	// AutoPause without a success is paused. Nil: no destination is ever
	// paused.
	Destinations destinationStates
	// AutoPause is how long a destination fails without a success before
	// it is paused (default DefaultAutoPause; negative: never).
	AutoPause time.Duration
	// PausePoll, when > 0, bounds how long a message waits for a
	// destination paused less than destination.MinPoll ago before it
	// looks again (default destination.Poll alone, at least a minute):
	// make run's short pauses drain within seconds of their resume, and a
	// pause costs at most MinPoll/PausePoll more receives.
	PausePoll time.Duration
	// Wait sleeps until a rate slot's time on Now's clock, and reports
	// false when ctx ended first (default: a timer).
	Wait   func(ctx context.Context, until time.Time) bool
	Now    func() time.Time
	Logger *slog.Logger
}

// Handler consumes SQS batches. It is safe for concurrent use.
type Handler struct {
	cfg Config
	// created caches each source queue's CreatedTimestamp by URL
	// (incarnation: for the messages sent before it was read); reading
	// serialises the reads.
	created sync.Map
	reading sync.Mutex
}

// New returns a handler; missing optional fields take defaults.
func New(cfg Config) *Handler {
	if cfg.SafetyMargin <= 0 {
		cfg.SafetyMargin = DefaultSafetyMargin
	}
	if cfg.FinishTimeout <= 0 || cfg.FinishTimeout > cfg.SafetyMargin {
		cfg.FinishTimeout = min(DefaultFinishTimeout, cfg.SafetyMargin)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = ledger.DefaultLease
	}
	if cfg.EffectTimeout <= 0 {
		cfg.EffectTimeout = DefaultEffectTimeout
	}
	if cfg.QueueRetention <= 0 {
		cfg.QueueRetention = DefaultQueueRetention
	}
	if cfg.ExpiryMargin <= 0 {
		cfg.ExpiryMargin = DefaultExpiryMargin
	}
	if cfg.LedgerRetention <= 0 {
		cfg.LedgerRetention = ledger.DefaultRetention
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AutoPause == 0 {
		cfg.AutoPause = DefaultAutoPause
	}
	if cfg.Limiter == nil {
		cfg.Limiter = ratelimit.NewMemory(ratelimit.Options{})
	}
	if cfg.Wait == nil {
		now := cfg.Now
		cfg.Wait = func(ctx context.Context, until time.Time) bool {
			if d := until.Sub(now()); d > 0 {
				return pause(ctx, d)
			}
			return ctx.Err() == nil
		}
	}
	return &Handler{cfg: cfg}
}

// outcome names what happened to one message, in logs and metrics.
type outcome string

const (
	outProcessed    outcome = "processed"
	outDuplicate    outcome = "skipped_duplicate"
	outRetried      outcome = "retried"
	outDeadLettered outcome = "dead_lettered"
	outBlocked      outcome = "blocked"
	outDeadline     outcome = "deadline"
	outFenced       outcome = "fenced"
	outTimedOut     outcome = "timed_out"
	// outPaced: it waits for a rate limit's slot (ErrPaced), not an
	// attempt; outFiltered: done, no destination's filter selects it.
	outPaced    outcome = "paced"
	outFiltered outcome = "filtered"
	// outPaused: it waits for a paused destination (ErrPaused), not an
	// attempt.
	outPaused outcome = "paused"
	// outDeadAlready: the event was dead-lettered and this copy is no
	// replay of it (ledger.ErrDead); the copy is deleted.
	outDeadAlready outcome = "skipped_dead_lettered"
	// outSuperseded: a later message of the conversation holds the event
	// (ledger.ErrFenced by another message); this stale copy is deleted.
	outSuperseded outcome = "superseded"
)

// result is what happened to one message.
type result struct {
	outcome outcome
	failed  bool // reported in batchItemFailures
	// visibility, when setVisibility, is the new visibility timeout.
	visibility    time.Duration
	setVisibility bool
	visibilityErr error
	err           error

	// env is the message's envelope (nil when its body could not be read
	// or decoded), and id the event it names (known: from env, or from
	// its identity attributes), as message read them, once.
	env   *envelope.Envelope
	id    queue.Identity
	known bool
	// receives is the ApproximateReceiveCount; attempt is the number of
	// this failed attempt as counted in the ledger (0 when the message did
	// not fail, or the count could not be recorded).
	receives       int
	attempt        int
	start          time.Time
	dur            time.Duration
	effects, skips int
	effectDur      time.Duration
	groupID        string
	// seq is its SequenceNumber; heldFrom, when it is decided behind an
	// earlier message of its conversation that failed in the same batch,
	// that message's (ledger.Fence.HeldFrom).
	seq, heldFrom string
	// heldByCopy: it failed because a concurrent copy of it (a batch
	// invoked twice) holds its event or an effect under a live lease.
	heldByCopy bool
	// fence and touched: the message's fence and the effects it claimed
	// or found completed, which its dead letter buries.
	fence   ledger.Fence
	touched []ledger.Key
	leases  []ledger.Lease
}

// Handle processes one batch and reports the messages to leave on the
// queue. It never returns an error: that would make the mapping retry the
// whole batch, repeating the work of groups that succeeded. Under a
// deadline it never outlives its effects either: it waits for the groups
// until the cut-off (the deadline less the clean-up budget), reports every
// message that finished as it finished (so SQS deletes the done ones), and
// reports the rest failed — a group still running then (an effect that
// ignores its context) is left behind, and whatever it writes later is
// fenced by its lease or discarded.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	b := h.newBudget(ctx)
	b.pace = h.newPacer(ev.Records, b)
	b.pauses = h.newPauses()
	t := newTracker(ev.Records)
	grouped := groups(ev.Records)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, group := range grouped {
		wg.Go(func() { h.runGroup(ctx, t, ev.Records, group, b) })
	}
	go func() { wg.Wait(); close(done) }()
	if b.limited() {
		// The cut-off, or the invocation's end if it comes first.
		cctx, cancel := context.WithDeadline(ctx, b.cutoff)
		select {
		case <-done:
		case <-cctx.Done():
		}
		cancel()
	} else {
		<-done
	}
	results, finished, started := t.close()
	h.leftBehind(ctx, ev.Records, grouped, results, finished, started, b)

	h.limitVisibility(results, b.start)
	h.changeVisibility(ctx, ev.Records, results, b)
	var resp events.SQSEventResponse
	for i := range ev.Records {
		if results[i].failed {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
		h.log(ctx, &ev.Records[i], &results[i])
	}
	h.logBatch(ctx, results)
	return resp, nil
}

func receivesOf(rec *events.SQSMessage) int {
	n, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func (h *Handler) newResult(rec *events.SQSMessage) result {
	return result{receives: receivesOf(rec), start: h.cfg.Now(), groupID: rec.Attributes["MessageGroupId"], seq: rec.Attributes["SequenceNumber"]}
}

// MinMaxReceiveCount is the smallest queue maxReceiveCount at which SQS's
// redrive cannot move a message to the DLQ before the worker gives up on
// it with a reason, for a worker with the given MaxAttempts and batches of
// up to 10 messages. A message is received once per attempt of its own
// (at most maxAttempts) and once per failed attempt of each earlier
// message of its conversation that shares its batch: FIFO batches hold a
// group's messages in order, so those are the at most 9 messages right
// before it, each failing at most maxAttempts times. That is 10 ×
// maxAttempts receives. From there every failure or wait for a rate of a
// message gives it up at once (decide), a wait for a paused destination
// within 10 more receives, and every earlier message of its batch gives up
// at its own (dead-lettered, it no longer holds the message back), so
// receiveSlack more cover those waits, the receive that gives it up and 10
// that end in an invocation that crashed, lost an answer, ran out of time
// or ran twice, which count no attempt.
func MinMaxReceiveCount(maxAttempts int) int {
	return maxBatch*maxAttempts + receiveSlack
}

const (
	maxBatch     = 10 // SQS FIFO event source mappings deliver at most 10 messages
	receiveSlack = 20
)
