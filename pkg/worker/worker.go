package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/internal/metrics"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/webhook"
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
	// DefaultExpiryMargin is longer than a message can spend as its
	// conversation's head (15 attempts span at most 23 h), so the messages
	// behind a failing head, which SQS hands out only after it, reach the
	// worker before their retention ends, and are dead-lettered if they
	// are that old.
	DefaultExpiryMargin = 48 * time.Hour
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
	// Queues reads each source queue's CreatedTimestamp once per instance
	// (the SQS client), so that fencing tokens of a queue deleted and
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
	// always do. Without it the forward's message deletion completes it,
	// and a message whose deletion was lost, or a batch invoked twice,
	// forwards again under the same Idempotency-Key and webhook-id, which
	// the receiver deduplicates (docs/ledger.md).
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
	// Lease is the effect lease when the context has no deadline (a local
	// poller); under Lambda a lease lasts until the invocation's deadline.
	Lease  time.Duration
	Now    func() time.Time
	Logger *slog.Logger
}

// Handler consumes SQS batches. It is safe for concurrent use.
type Handler struct {
	cfg Config
	// created caches each source queue's CreatedTimestamp by URL.
	created sync.Map
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
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

	env *envelope.Envelope
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
	start := h.cfg.Now()
	t := newTracker(start, len(ev.Records))
	deadline, hasDeadline := ctx.Deadline()
	var workDeadline, cutoff time.Time
	if hasDeadline {
		workDeadline = deadline.Add(-h.cfg.SafetyMargin)
		cutoff = deadline.Add(-2 * h.cfg.FinishTimeout)
		if cutoff.Before(workDeadline) {
			cutoff = workDeadline
		}
	}
	grouped := groups(ev.Records)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, group := range grouped {
		wg.Go(func() { h.runGroup(ctx, t, ev.Records, group, workDeadline) })
	}
	go func() { wg.Wait(); close(done) }()
	if hasDeadline {
		cctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), cutoff)
		select {
		case <-done:
		case <-cctx.Done():
		}
		cancel()
	} else {
		<-done
	}
	results, finished, started := t.close()
	h.leftBehind(ctx, ev.Records, grouped, results, finished, started, deadline)

	h.limitVisibility(results, start)
	h.changeVisibility(ctx, ev.Records, results)
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

// runGroup processes one conversation's messages in order: a message
// behind a failed one waits with it; one not started before the work
// deadline is handed to the next invocation; one near the end of its
// queue retention is dead-lettered rather than left to expire.
func (h *Handler) runGroup(ctx context.Context, t *tracker, recs []events.SQSMessage, group []int, workDeadline time.Time) {
	var blocker *result
	for _, i := range group {
		if !t.start(i) {
			return
		}
		rec := &recs[i]
		var r result
		switch {
		case blocker != nil:
			r = h.blocked(rec, blocker)
			if h.expiresBefore(rec, h.cfg.Now().Add(r.visibility)) {
				r = h.expiring(ctx, t, i, rec, r)
			}
		case !workDeadline.IsZero() && !h.cfg.Now().Before(workDeadline):
			r = h.expired(rec)
		default:
			r = h.process(ctx, t, i, rec, workDeadline)
		}
		if !t.publish(i, r) {
			return
		}
		if r.failed && blocker == nil {
			blocker = &r
		}
	}
}

// leftBehind settles the messages the cut-off found unfinished: in each
// group, the one that was running is a failed attempt (counted, so an
// effect that hangs every time ends in the DLQ with a reason) and comes
// back once its effects' leases have ended; the ones after it wait with it.
func (h *Handler) leftBehind(ctx context.Context, recs []events.SQSMessage, grouped [][]int, results []result, finished, started []bool, deadline time.Time) {
	for _, group := range grouped {
		var blocker *result
		for _, i := range group {
			if finished[i] {
				continue
			}
			rec := &recs[i]
			if blocker != nil || !started[i] {
				if blocker == nil {
					results[i] = h.expired(rec)
				} else {
					results[i] = h.blocked(rec, blocker)
				}
				continue
			}
			r := h.newResult(rec)
			r.env, _ = envelope.Decode([]byte(rec.Body))
			fctx, cancel := h.finish(ctx)
			n, cerr := h.cfg.Ledger.FailedAttempt(fctx, rec.MessageId)
			cancel()
			if cerr == nil {
				r.attempt = n
			}
			// The leases of its effects last until the deadline (see
			// process): a retry before then would wait on them.
			lease := deadline.Add(time.Second).Sub(h.cfg.Now())
			r = h.retry(r, RetryAfter(fmt.Errorf("%w: the message was still running at the invocation's cut-off", ErrTimedOut), lease))
			r.outcome = outTimedOut
			results[i] = r
			blocker = &results[i]
		}
	}
}

// groups returns the record indices per message group, groups in order of
// first appearance, records in batch order (SQS FIFO's order). Records
// without a group (standard queues) are each their own group.
func groups(recs []events.SQSMessage) [][]int {
	var out [][]int
	index := map[string]int{}
	for i, r := range recs {
		g, ok := r.Attributes["MessageGroupId"]
		if !ok || g == "" {
			out = append(out, []int{i})
			continue
		}
		j, seen := index[g]
		if !seen {
			j = len(out)
			index[g] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], i)
	}
	return out
}

func receivesOf(rec *events.SQSMessage) int {
	n, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func (h *Handler) newResult(rec *events.SQSMessage) result {
	return result{receives: receivesOf(rec), start: h.cfg.Now(), groupID: rec.Attributes["MessageGroupId"]}
}

// MinMaxReceiveCount is the smallest queue maxReceiveCount at which SQS's
// redrive cannot move a message to the DLQ before the worker gives up on
// it with a reason, for a worker with the given MaxAttempts and batches of
// up to 10 messages. A message is received once per attempt of its own
// (at most maxAttempts) and once per failed attempt of each earlier
// message of its conversation that shares its batch: FIFO batches hold a
// group's messages in order, so those are the at most 9 messages right
// before it, each failing at most maxAttempts times. That is 10 ×
// maxAttempts receives; receiveSlack more cover receives that end at the
// work deadline or in a crashed invocation, which count no attempt.
func MinMaxReceiveCount(maxAttempts int) int {
	return maxBatch*maxAttempts + receiveSlack
}

const (
	maxBatch     = 10 // SQS FIFO event source mappings deliver at most 10 messages
	receiveSlack = 20
)

// blocked reports a message behind a failed one of its group: it waits as
// long as the failure does, so the group resumes in order.
func (h *Handler) blocked(rec *events.SQSMessage, blocker *result) result {
	r := h.newResult(rec)
	r.outcome, r.failed = outBlocked, true
	r.visibility, r.setVisibility = blocker.visibility, blocker.setVisibility
	r.env, _ = envelope.Decode([]byte(rec.Body))
	return r
}

// expired reports a message not started before the work deadline; it is
// made visible at once so the next invocation takes it.
func (h *Handler) expired(rec *events.SQSMessage) result {
	r := h.newResult(rec)
	r.outcome, r.failed, r.setVisibility = outDeadline, true, true
	r.env, _ = envelope.Decode([]byte(rec.Body))
	return r
}

// process runs message i's handler and routes its failure.
func (h *Handler) process(ctx context.Context, t *tracker, i int, rec *events.SQSMessage, workDeadline time.Time) (r result) {
	r = h.newResult(rec)
	defer func() { r.dur = h.cfg.Now().Sub(r.start) }()
	hasDeadline := !workDeadline.IsZero()

	body, err := h.body(ctx, rec, workDeadline, hasDeadline)
	if err != nil {
		return h.failure(ctx, t, i, rec, r, err)
	}
	env, err := envelope.Decode(body)
	if err != nil {
		return h.failure(ctx, t, i, rec, r, Permanent(err))
	}
	r.env = env
	if r.groupID == "" {
		r.groupID = webhook.GroupID(env.Conversation, env.Key)
	}
	handle, ok := h.cfg.Handlers.Lookup(env.Provider, env.Type)
	if !ok {
		return h.failure(ctx, t, i, rec, r, Permanent(fmt.Errorf("%w: %s/%s", ErrNoHandler, env.Provider, env.Type)))
	}

	lease := h.cfg.Lease
	hctx, cancel := ctx, context.CancelFunc(func() {})
	if hasDeadline {
		hctx, cancel = context.WithDeadline(ctx, workDeadline)
		// The lease lasts as long as this invocation can: a Lambda killed at
		// its deadline holds nothing after it.
		lease = workDeadline.Add(h.cfg.SafetyMargin).Sub(h.cfg.Now()) + time.Second
	}
	ev := &Event{
		Envelope: env, MessageID: rec.MessageId, Attempt: r.receives, GroupID: r.groupID,
		ledger: h.cfg.Ledger, lease: lease, now: h.cfg.Now, completeEach: h.cfg.CompleteEffects,
		effectTimeout: h.cfg.EffectTimeout, workDeadline: workDeadline, window: workDeadline.Sub(t.begun),
	}
	// Effects record their outcome by the invocation's deadline, not by
	// their own context's (the work deadline).
	invocation, _ := ctx.Deadline()
	ev.finish = func(c context.Context) (context.Context, context.CancelFunc) { return h.finishBy(c, invocation) }
	ev.fence, ev.fenceErr = ledger.NewFence(env.Tenant, r.groupID, rec.Attributes["SequenceNumber"], r.receives, redriven(rec))
	if !env.ReceivedAt.IsZero() {
		ev.fence.Origin = env.ReceivedAt.UTC().Format(time.RFC3339Nano)
	}
	if ev.fence.Queue, err = h.incarnation(ctx, rec); err != nil {
		cancel()
		return h.failure(ctx, t, i, rec, r, err)
	}
	err = h.run(hctx, handle, ev)
	cancel()
	if err != nil && !lost(err) {
		// The message will not be reported done, so its deletion will not
		// record the effects that ran: record them, so that its retry or
		// replay skips them.
		fctx, fcancel := h.finish(ctx)
		if serr := ev.settle(fctx); serr != nil {
			err = errors.Join(err, serr)
		}
		fcancel()
	}
	r.effects, r.skips, r.effectDur = ev.ran, ev.skipped, ev.effectDur

	switch {
	case err == nil && r.effects == 0 && r.skips > 0:
		r.outcome = outDuplicate
	case err == nil:
		r.outcome = outProcessed
	case errors.Is(err, ledger.ErrFenced), errors.Is(err, ledger.ErrLeaseLost):
		// A newer worker owns the message now; leave its visibility alone.
		r.outcome, r.failed, r.err = outFenced, true, err
	case errors.Is(err, ErrNoTime) && !IsPermanent(err):
		// Not an attempt: the next invocation starts it with time to finish.
		r = h.expired(rec)
		r.err, r.env = err, env
	default:
		r = h.failure(ctx, t, i, rec, r, err)
	}
	return r
}

// incarnation returns the CreatedTimestamp of rec's queue (one
// GetQueueAttributes per queue and instance), or "" without Config.Queues.
func (h *Handler) incarnation(ctx context.Context, rec *events.SQSMessage) (string, error) {
	if h.cfg.Queues == nil {
		return "", nil
	}
	url, err := queue.URLForARN(rec.EventSourceARN, h.cfg.QueueURLTemplate)
	if err != nil {
		return "", Permanent(err)
	}
	if v, ok := h.created.Load(url); ok {
		return v.(string), nil
	}
	out, err := h.cfg.Queues.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameCreatedTimestamp},
	})
	if err != nil {
		return "", fmt.Errorf("queue %s creation time: %w", url, err)
	}
	created := out.Attributes[string(types.QueueAttributeNameCreatedTimestamp)]
	if created == "" {
		return "", fmt.Errorf("queue %s has no CreatedTimestamp", url)
	}
	h.created.Store(url, created)
	return created, nil
}

// redriven reports whether scripts/replay moved rec back from the DLQ
// (AttrReplayOf). AWS's own redrive (StartMessageMoveTask, the console's
// "Start DLQ redrive") needs no mark: the moved message keeps its envelope,
// and with it the fence's Origin, which tells it from a later copy of the
// event the ingest enqueued (ledger.Fence.Origin).
func redriven(rec *events.SQSMessage) bool {
	_, ok := rec.MessageAttributes[AttrReplayOf]
	return ok
}

// sentAt returns the message's SentTimestamp (when SQS accepted it; a
// redrive resets it, and with it the message's retention).
func sentAt(rec *events.SQSMessage) (time.Time, bool) {
	ms, err := strconv.ParseInt(rec.Attributes["SentTimestamp"], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// body returns the envelope a message carries: its body, or for a pointer
// message the object in S3 it names. A pointer that names nothing of this
// deployment, or an object gone, is permanent; a failed read transient.
func (h *Handler) body(ctx context.Context, rec *events.SQSMessage, workDeadline time.Time, hasDeadline bool) ([]byte, error) {
	if _, ok := rec.MessageAttributes[queue.SizeAttribute]; !ok {
		return []byte(rec.Body), nil
	}
	if h.cfg.Payloads == nil {
		return nil, Permanent(fmt.Errorf("%w: no payload bucket configured", queue.ErrPointer))
	}
	if hasDeadline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, workDeadline)
		defer cancel()
	}
	b, err := h.cfg.Payloads.Get(ctx, rec.Body)
	if errors.Is(err, queue.ErrPointer) || errors.Is(err, queue.ErrPayloadGone) {
		return nil, Permanent(err)
	}
	return b, err
}

// failure counts a failed attempt and routes it: a permanent error, or the
// MaxAttempts-th transient one, to the DLQ; any other to a retry after the
// backoff of its attempt. When the count cannot be recorded, a transient
// failure is retried as if it were the first (the worker never gives up on
// a count it does not know; the queue's maxReceiveCount bounds that).
//
// Waiting on another worker's live lease (ledger.ErrInFlight) is not an
// attempt: the message retries once the lease ends, and counts nothing. A
// message whose retry would come back after its queue retention ends is
// dead-lettered with ErrExpiring instead.
func (h *Handler) failure(ctx context.Context, t *tracker, i int, rec *events.SQSMessage, r result, err error) result {
	if !t.open() {
		// Left behind at the cut-off: Handle already counted and routed it.
		r.outcome, r.failed, r.err = outTimedOut, true, err
		return r
	}
	if !IsPermanent(err) && errors.Is(err, ledger.ErrInFlight) {
		return h.retry(r, err)
	}
	fctx, cancel := h.finish(ctx)
	n, cerr := h.cfg.Ledger.FailedAttempt(fctx, rec.MessageId)
	cancel()
	if cerr == nil {
		r.attempt = n
	}
	switch {
	case IsPermanent(err):
		return h.deadLetter(ctx, t, i, rec, r, err)
	case cerr != nil:
		r = h.retry(r, errors.Join(err, cerr))
	case h.cfg.MaxAttempts > 0 && n >= h.cfg.MaxAttempts:
		return h.deadLetter(ctx, t, i, rec, r, fmt.Errorf("gave up after %d attempts: %w", n, err))
	default:
		r = h.retry(r, err)
	}
	if h.expiresBefore(rec, h.cfg.Now().Add(r.visibility)) {
		return h.expiring(ctx, t, i, rec, r)
	}
	return r
}

// expiresBefore reports whether rec's queue retention (counted from its
// SentTimestamp, or the envelope's receivedAt when absent) ends, less
// Config.ExpiryMargin, before at.
func (h *Handler) expiresBefore(rec *events.SQSMessage, at time.Time) bool {
	end, ok := h.retentionEnd(rec)
	return ok && !at.Before(end.Add(-h.cfg.ExpiryMargin))
}

// retentionEnd is when SQS would delete rec without sending it anywhere.
func (h *Handler) retentionEnd(rec *events.SQSMessage) (time.Time, bool) {
	sent, ok := sentAt(rec)
	if !ok {
		env, err := envelope.Decode([]byte(rec.Body))
		if err != nil || env.ReceivedAt.IsZero() {
			return time.Time{}, false
		}
		sent = env.ReceivedAt
	}
	return sent.Add(h.cfg.QueueRetention), true
}

// expiring dead-letters a message that would otherwise wait past its
// queue's retention (a conversation blocked for days), with its age and
// why it was waiting as the reason.
func (h *Handler) expiring(ctx context.Context, t *tracker, i int, rec *events.SQSMessage, r result) result {
	end, _ := h.retentionEnd(rec)
	reason := fmt.Sprintf("%v: SQS deletes it at %s", ErrExpiring, end.UTC().Format(time.RFC3339))
	if sent, ok := sentAt(rec); ok {
		reason += fmt.Sprintf("; queued %s ago", h.cfg.Now().Sub(sent).Round(time.Minute))
	}
	if env, err := envelope.Decode([]byte(rec.Body)); err == nil && !env.ReceivedAt.IsZero() {
		reason += fmt.Sprintf("; received %s ago", h.cfg.Now().Sub(env.ReceivedAt).Round(time.Minute))
	}
	if r.err != nil {
		reason += "; waiting on: " + r.err.Error()
	}
	return h.deadLetter(ctx, t, i, rec, r, errors.New(reason))
}

// run calls the handler, turning a panic into a transient error: a bug
// must not take the other groups of the batch down with it, and retrying
// (rather than dead-lettering) keeps the conversation in order until the
// fix is deployed.
func (h *Handler) run(ctx context.Context, handle HandlerFunc, ev *Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			h.cfg.Logger.ErrorContext(ctx, "handler panicked",
				slog.String("tenantId", ev.Tenant), slog.String("idempotencyKey", ev.Key),
				slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return handle(ctx, ev)
}

// retry schedules the message again after the backoff of its attempt (the
// first when r.attempt is unknown).
func (h *Handler) retry(r result, err error) result {
	r.outcome, r.failed, r.err = outRetried, true, err
	r.visibility, r.setVisibility = h.cfg.Retry.Delay(max(r.attempt, 1), retryAfterOf(err)), true
	return r
}

// deadLetter sends the message to its queue's DLQ with the reason and
// reports it done, so the mapping deletes it and its conversation
// continues. When the DLQ cannot be reached it retries the message
// instead: nothing is dropped.
func (h *Handler) deadLetter(ctx context.Context, t *tracker, i int, rec *events.SQSMessage, r result, cause error) result {
	r.err = cause
	if !t.reserve(i) {
		// The batch was cut off: the message is reported failed, so it must
		// not reach the DLQ as well.
		r.outcome, r.failed = outTimedOut, true
		return r
	}
	source, err := queue.URLForARN(rec.EventSourceARN, h.cfg.QueueURLTemplate)
	if err != nil {
		return h.retry(r, errors.Join(cause, fmt.Errorf("dead-letter: %w", err)))
	}
	dlq, err := DLQURL(source)
	if err != nil {
		return h.retry(r, errors.Join(cause, fmt.Errorf("dead-letter: %w", err)))
	}
	group := r.groupID
	if group == "" {
		group = rec.MessageId
	}
	attrs := map[string]string{
		AttrReason:    attrText(cause.Error(), maxReasonBytes),
		AttrGroupID:   group,
		AttrMessageID: rec.MessageId,
		AttrFailedAt:  h.cfg.Now().UTC().Format(time.RFC3339),
	}
	if r.attempt > 0 {
		attrs[AttrAttempts] = strconv.Itoa(r.attempt)
	}
	if r.env != nil {
		attrs[AttrEventKey] = r.env.Key
	}
	if size, ok := rec.MessageAttributes[queue.SizeAttribute]; ok {
		attrs[queue.SizeAttribute] = aws.ToString(size.StringValue) // the body is a pointer
	}
	fctx, cancel := h.finish(ctx)
	defer cancel()
	_, err = h.cfg.DLQ.Send(fctx, dlq, queue.Message{
		GroupID: group,
		// Stable per source message: a redelivery that dead-letters again
		// within SQS's five-minute window is dropped by SQS.
		DeduplicationID: webhook.DeduplicationID("dlq#" + rec.MessageId),
		Body:            []byte(rec.Body),
		Attributes:      attrs,
	})
	if err != nil {
		return h.retry(r, errors.Join(cause, fmt.Errorf("dead-letter: %w", err)))
	}
	r.outcome, r.failed = outDeadLettered, false
	return r
}

// finish returns a context for the bookkeeping after the work deadline: it
// survives ctx's cancellation, bounded by FinishTimeout and by ctx's own
// deadline (the invocation's end), which every clean-up call shares.
func (h *Handler) finish(ctx context.Context) (context.Context, context.CancelFunc) {
	d, _ := ctx.Deadline()
	return h.finishBy(ctx, d)
}

// finishBy is finish bounded by the invocation's deadline (zero: none). Past
// it (a straggler the batch left behind, resumed later), a call gets
// FinishTimeout of its own: nobody waits for it, and recording what its
// effect did keeps the next attempt from repeating it.
func (h *Handler) finishBy(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.FinishTimeout)
	if end := deadline.Add(-finishSlack); !deadline.IsZero() && time.Now().Before(end) {
		var cancel2 context.CancelFunc
		fctx, cancel2 = context.WithDeadline(fctx, end)
		return fctx, func() { cancel2(); cancel() }
	}
	return fctx, cancel
}

// finishSlack is kept free before the deadline to return the batch's answer.
const finishSlack = 100 * time.Millisecond

// visibilitySlack covers the time between SQS's receive and the handler's
// start, which counts toward SQS's 12-hour visibility limit.
const visibilitySlack = time.Minute

// limitVisibility keeps each new visibility timeout inside SQS's limit:
// at most 12 hours from the receive (the batch's start), or SQS rejects the
// change and the message comes back after the queue's default. A longer
// Retry-After is honoured up to the limit; the next attempt asks again.
func (h *Handler) limitVisibility(results []result, start time.Time) {
	limit := (MaxDelay - h.cfg.Now().Sub(start) - visibilitySlack).Truncate(time.Second)
	for i := range results {
		if r := &results[i]; r.setVisibility && r.visibility > limit {
			r.visibility = max(limit, 0)
		}
	}
}

// changeVisibility applies the new visibility timeouts, ten per request
// per queue. A failure is recorded on each message's log line: the message
// then reappears after the queue's default visibility timeout instead.
func (h *Handler) changeVisibility(ctx context.Context, recs []events.SQSMessage, results []result) {
	byQueue := map[string][]int{}
	var order []string
	for i := range recs {
		if !results[i].failed || !results[i].setVisibility {
			continue
		}
		url, err := queue.URLForARN(recs[i].EventSourceARN, h.cfg.QueueURLTemplate)
		if err != nil {
			results[i].visibilityErr = err
			continue
		}
		if _, ok := byQueue[url]; !ok {
			order = append(order, url)
		}
		byQueue[url] = append(byQueue[url], i)
	}
	fctx, cancel := h.finish(ctx)
	defer cancel()
	for _, url := range order {
		idx := byQueue[url]
		for len(idx) > 0 {
			n := min(len(idx), 10)
			entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, n)
			for j, i := range idx[:n] {
				entries[j] = types.ChangeMessageVisibilityBatchRequestEntry{
					Id:                aws.String(strconv.Itoa(i)),
					ReceiptHandle:     aws.String(recs[i].ReceiptHandle),
					VisibilityTimeout: int32(results[i].visibility / time.Second),
				}
			}
			out, err := h.cfg.Visibility.ChangeMessageVisibilityBatch(fctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err != nil {
				for _, i := range idx[:n] {
					results[i].visibilityErr = fmt.Errorf("change visibility: %w", err)
				}
			} else {
				for _, f := range out.Failed {
					if i, err := strconv.Atoi(aws.ToString(f.Id)); err == nil && i < len(results) {
						results[i].visibilityErr = fmt.Errorf("change visibility: %s", aws.ToString(f.Code))
					}
				}
			}
			idx = idx[n:]
		}
	}
}

// log writes the message's one line: fixed keys, no body, secret or
// signature. A message done (processed or skipped) is logged at DEBUG, which
// Lambda's ApplicationLogLevel INFO drops before CloudWatch bills it: the
// webhook's one INFO line is ingest's, and the batch line counts it. Every
// failure is logged at WARN or ERROR with its reason.
func (h *Handler) log(ctx context.Context, rec *events.SQSMessage, r *result) {
	level := slog.LevelDebug
	switch r.outcome {
	case outDeadLettered:
		level = slog.LevelError
	case outRetried, outBlocked, outDeadline, outFenced:
		level = slog.LevelWarn
	}
	if !h.cfg.Logger.Enabled(ctx, level) {
		return
	}
	attrs := []any{
		slog.String("messageId", rec.MessageId),
		slog.String("outcome", string(r.outcome)),
		slog.Int("receiveCount", r.receives),
		slog.Float64("durationMs", ms(r.dur)),
		slog.String("groupId", r.groupID),
	}
	if r.env != nil {
		attrs = append(attrs,
			slog.String("tenantId", r.env.Tenant),
			slog.String("provider", r.env.Provider),
			slog.String("eventId", r.env.EventID),
			slog.String("eventType", r.env.Type),
			slog.String("idempotencyKey", r.env.Key),
		)
		if !r.env.ReceivedAt.IsZero() {
			attrs = append(attrs, slog.Float64("ageMs", ms(h.cfg.Now().Sub(r.env.ReceivedAt))))
		}
	}
	if r.attempt > 0 {
		attrs = append(attrs, slog.Int("attempt", r.attempt))
	}
	if r.effects+r.skips > 0 {
		attrs = append(attrs, slog.Int("effects", r.effects), slog.Int("effectsSkipped", r.skips), slog.Float64("effectMs", ms(r.effectDur)))
	}
	if r.setVisibility {
		attrs = append(attrs, slog.Int64("visibilitySec", int64(r.visibility/time.Second)))
	}
	if r.err != nil {
		attrs = append(attrs, slog.String("error", r.err.Error()))
	}
	if r.visibilityErr != nil {
		attrs = append(attrs, slog.String("visibilityError", r.visibilityErr.Error()))
	}
	h.cfg.Logger.Log(ctx, level, "message", attrs...)
}

// logBatch writes one INFO line per outcome present in the batch, each an
// EMF record: Messages (the count) by outcome, MessageDuration and
// EffectLatency with one value per message. Aggregating per batch keeps the
// metrics of every message at a tenth of the bytes of one line each.
func (h *Handler) logBatch(ctx context.Context, results []result) {
	type agg struct {
		durations, effects []float64
	}
	byOutcome := map[outcome]*agg{}
	var order []outcome
	for i := range results {
		r := &results[i]
		a := byOutcome[r.outcome]
		if a == nil {
			a = &agg{}
			byOutcome[r.outcome] = a
			order = append(order, r.outcome)
		}
		a.durations = append(a.durations, ms(r.dur))
		if r.effects > 0 {
			a.effects = append(a.effects, ms(r.effectDur))
		}
	}
	for _, o := range order {
		a := byOutcome[o]
		mets := []metrics.Metric{
			{Name: "Messages", Unit: metrics.Count, Value: float64(len(a.durations))},
			{Name: "MessageDuration", Unit: metrics.Milliseconds, Values: a.durations},
		}
		if len(a.effects) > 0 {
			mets = append(mets, metrics.Metric{Name: "EffectLatency", Unit: metrics.Milliseconds, Values: a.effects})
		}
		attrs := append([]any{slog.String("outcome", string(o))}, metrics.Attrs(h.cfg.Now(), []string{"outcome"}, mets...)...)
		h.cfg.Logger.Log(ctx, slog.LevelInfo, "batch", attrs...)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
