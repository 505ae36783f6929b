package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
)

// message is one SQS record on its way through the worker, read → decide
// → act: the record and its place in the batch (i, in t), and r, what is
// known of it so far (its envelope and the event it names, read once; its
// group, receive count, fence and, once decided, its outcome), which its
// log line and the batch's answer report.
type message struct {
	rec *events.SQSMessage
	i   int
	t   *tracker
	r   result
}

// newMessage starts message i of the batch t tracks on its way.
func (h *Handler) newMessage(t *tracker, i int, rec *events.SQSMessage) *message {
	return &message{rec: rec, i: i, t: t, r: h.newResult(rec)}
}

// streamOf returns rec's stream (queue.AttrStream): a value that cannot be
// read is permanent.
func streamOf(rec *events.SQSMessage) (queue.Stream, error) {
	s, err := queue.StreamOf(rec.MessageAttributes)
	if err != nil {
		return s, Permanent(err)
	}
	return s, nil
}

// read reads m's body (from S3 for a pointer, within until when it is not
// zero) and decodes its envelope, and names its event: from the envelope,
// or from its identity attributes when there is none (queue.IdentityOf).
// It returns why there is no envelope: its body could not be read
// (transient, or permanent when the pointer names nothing) or decoded
// (permanent).
func (h *Handler) read(ctx context.Context, m *message, until time.Time) error {
	var env *envelope.Envelope
	body, err := h.body(ctx, m.rec, until)
	if err == nil {
		if env, err = envelope.Decode(body); err != nil {
			err = Permanent(err)
		}
	}
	id, known := identify(m.rec, env)
	if s, serr := streamOf(m.rec); serr != nil && err == nil {
		err = serr
	} else {
		id.Stream = s
	}
	m.r.env, m.r.id, m.r.known = env, id, known
	return err
}

// identify names the event of message rec: its envelope's, or when there
// is none (the body cannot be read or decoded) the identity its attributes
// carry (queue.IdentityOf). It reports false when neither names one.
func identify(rec *events.SQSMessage, env *envelope.Envelope) (queue.Identity, bool) {
	if env != nil {
		return queue.EnvelopeIdentity(env), true
	}
	return queue.IdentityOf(rec.MessageAttributes)
}

// readNow reads m for a verdict decided before it ran (its log line and
// dead letter name its event), within the clean-up budget; why it has no
// envelope is for that verdict, decided already, to say.
func (h *Handler) readNow(ctx context.Context, m *message) {
	fctx, cancel := h.finish(ctx)
	defer cancel()
	_ = h.read(fctx, m, time.Time{})
}

// process runs message i's handler and routes its failure.
func (h *Handler) process(ctx context.Context, t *tracker, i int, rec *events.SQSMessage, b budget) (r result) {
	m := h.newMessage(t, i, rec)
	defer func() { r.dur = h.cfg.Now().Sub(r.start) }()

	var until time.Time
	if b.limited() {
		until = b.work
	}
	if err := h.read(ctx, m, until); err != nil {
		return h.judge(ctx, m, h.facts(rec, nil, err))
	}
	env := m.r.env
	if m.r.groupID == "" {
		m.r.groupID = m.r.id.Conversation
		if s := m.r.id.Stream; s.Destination != "" && !s.Effects {
			m.r.groupID = queue.StreamGroup(m.r.groupID, s.Destination)
		}
	}
	// The rules its envelope decides before it runs (its age).
	pre := h.facts(rec, env, nil)
	pre.pending = true
	if d := decide(pre); d.verdict != vRun {
		return h.act(ctx, m, d)
	}
	handle, ok, idle := h.cfg.Handlers.streamHandler(m.r.id.Stream, env.Provider, env.Type)
	if idle {
		// The event's custom effects' stream, and it has none: no write.
		return h.act(ctx, m, fate{verdict: vDone, outcome: outFiltered})
	}
	if !ok {
		return h.judge(ctx, m, h.facts(rec, env, Permanent(fmt.Errorf("%w: %s/%s", ErrNoHandler, env.Provider, env.Type))))
	}

	lease := h.cfg.Lease
	hctx, cancel := ctx, context.CancelFunc(func() {})
	if b.limited() {
		hctx, cancel = context.WithDeadline(ctx, b.work)
		lease = b.leaseEnd.Sub(h.cfg.Now())
	}
	ev := &Event{
		Envelope: env, MessageID: rec.MessageId, Attempt: m.r.receives, GroupID: m.r.groupID,
		ledger: h.cfg.Ledger, lease: lease, now: h.cfg.Now, completeEach: h.cfg.CompleteEffects,
		effectTimeout: h.cfg.EffectTimeout, workDeadline: b.work, window: b.window(),
		maxAttempts: h.cfg.MaxAttempts, pace: b.pace, pauses: b.pauses, stream: m.r.id.Stream,
	}
	if end, ok := h.retentionEnd(rec); ok {
		ev.expiring, ev.recordFrom = end.Add(-h.cfg.ExpiryMargin), end.Add(-2*h.cfg.ExpiryMargin)
	}
	// Effects record their outcome by the invocation's deadline, not by
	// their own context's (the work deadline).
	ev.finish = func(c context.Context) (context.Context, context.CancelFunc) { return h.finishBy(c, b.deadline) }
	ev.fence, ev.fenceErr = ledger.NewFence(env.Tenant, m.r.groupID, rec.Attributes["SequenceNumber"], m.r.receives, redriven(rec))
	ev.fence.MessageID, ev.fence.Event = rec.MessageId, eventRecord(m.r.id.Stream)
	if !env.ReceivedAt.IsZero() {
		ev.fence.Origin = env.ReceivedAt.UTC().Format(time.RFC3339Nano)
	}
	var err error
	if ev.fence.Queue, err = h.incarnation(ctx, rec, t.newest); err != nil {
		cancel()
		return h.judge(ctx, m, h.facts(rec, env, err))
	}
	if err = ev.begin(hctx); err == nil {
		err = h.run(hctx, handle, ev)
	}
	cancel()
	var sealErr error
	if err == nil {
		fctx, fcancel := h.finish(ctx)
		sealErr = ev.seal(fctx)
		fcancel()
	}
	if err != nil && !lost(err) {
		// The message will not be reported done, so its deletion will not
		// record the effects that ran: record them, so that its retry or
		// replay skips them. A retried message gives its event's claim up
		// too; a dead-lettered one keeps it for its burial.
		fctx, fcancel := h.finish(ctx)
		if serr := ev.settle(fctx); serr != nil {
			err = errors.Join(err, serr)
		}
		if !IsPermanent(err) {
			if rerr := ev.release(fctx, err.Error()); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		fcancel()
	}
	m.r.effects, m.r.skips, m.r.effectDur = ev.ran, ev.skipped, ev.effectDur
	m.r.fence, m.r.touched, m.r.leases = ev.fence, ev.touched, ev.leases

	f := h.facts(rec, env, err)
	f.ran, f.skipped, f.doneByDeletion, f.filtered = ev.ran, ev.skipped, ev.doneByDeletion, ev.filtered
	f.horizon(ev.horizon, ev.stream.Destination)
	var ce *ledger.ConflictError
	if errors.As(err, &ce) {
		f.otherMessage = !ev.fence.Wrote(ce.Record)
		m.r.heldByCopy = errors.Is(err, ledger.ErrInFlight) && !f.otherMessage
	}
	r = h.judge(ctx, m, f)
	if sealErr != nil {
		r.err = errors.Join(r.err, sealErr)
	}
	return r
}

// judge decides m's fate from f, answering decide's questions (the
// attempt count, the queue's incarnation) as it asks them, and acts on it.
func (h *Handler) judge(ctx context.Context, m *message, f facts) result {
	r, rec, t := &m.r, m.rec, m.t
	for {
		d := decide(f)
		switch d.verdict {
		case vCount:
			if !t.open() {
				// Left behind at the cut-off: Handle already counted and
				// routed it.
				r.outcome, r.failed, r.err = outTimedOut, true, f.err
				return *r
			}
			fctx, cancel := h.finish(ctx)
			f.attempt, f.countErr = h.cfg.Ledger.FailedAttempt(fctx, rec.MessageId, receivesOf(rec))
			cancel()
			f.counted = true
			if f.countErr == nil {
				r.attempt = f.attempt
			}
		case vAskQueue:
			f.askedQueue, f.requeued = true, h.requeued(ctx, rec, r.fence.Queue, t.newest)
		default:
			return h.act(ctx, m, d)
		}
	}
}

// act applies fate d to m: the result its log line and the batch's answer
// report, and the dead letter when there is one.
func (h *Handler) act(ctx context.Context, m *message, d fate) result {
	r := &m.r
	r.outcome, r.err = d.outcome, d.err
	switch d.verdict {
	case vRetry:
		r.failed, r.visibility, r.setVisibility = true, d.delay, true
	case vAgain:
		r.failed, r.visibility, r.setVisibility = true, 0, true
	case vLeave:
		r.failed = true
	case vDeadLetter:
		return h.deadLetter(ctx, m, d.err)
	}
	return *r
}

// facts gathers what decide needs to know about message rec whose handler
// (or what ran before it) returned err.
func (h *Handler) facts(rec *events.SQSMessage, env *envelope.Envelope, err error) facts {
	f := facts{err: err, maxAttempts: h.cfg.MaxAttempts, now: h.cfg.Now(), margin: h.cfg.ExpiryMargin, retry: h.cfg.Retry,
		ledgerRetention: h.cfg.LedgerRetention, receives: receivesOf(rec)}
	if end, ok := h.retentionEnd(rec); ok {
		f.retentionEnd, f.sent = end, end.Add(-h.cfg.QueueRetention)
	}
	if env != nil {
		f.receivedAt = env.ReceivedAt
	}
	return f
}

// retentionEnd is when SQS would delete rec without sending it anywhere.
func (h *Handler) retentionEnd(rec *events.SQSMessage) (time.Time, bool) {
	sent, ok := sentAt(rec)
	return sent.Add(h.cfg.QueueRetention), ok
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

// fenceOf is the fence of message rec of event id in its conversation
// group, for a dead letter sent before the message claimed anything: its
// place in the conversation and its queue's incarnation (so that the event's
// record tells a done event from one to bury), or, when it has no place (no
// SequenceNumber), the fence of an unknown place, which buries without
// comparing. It returns an error when its queue's incarnation cannot be
// read: a fence without it belongs to no series, so the event's record of a
// later copy that completed it would not show it done, and the dead letter
// would give a done event a second outcome (the caller retries instead).
func (h *Handler) fenceOf(ctx context.Context, rec *events.SQSMessage, id queue.Identity, group string, newest time.Time) (ledger.Fence, error) {
	f, err := ledger.NewFence(id.Tenant, group, rec.Attributes["SequenceNumber"], receivesOf(rec), redriven(rec))
	if err != nil {
		f = ledger.Fence{Tenant: id.Tenant, Conversation: group}
	}
	f.MessageID, f.Event = rec.MessageId, eventRecord(id.Stream)
	if !id.ReceivedAt.IsZero() {
		f.Origin = id.ReceivedAt.UTC().Format(time.RFC3339Nano)
	}
	if f.Sequence == "" {
		return f, nil
	}
	fctx, cancel := h.finish(ctx)
	defer cancel()
	f.Queue, err = h.incarnation(fctx, rec, newest)
	return f, err
}

// incarnation returns the label of rec's queue incarnation: its
// CreatedTimestamp, or "" without Config.Queues. A value read before is used
// only for a message sent no later than the newest message of the batch it
// was read in (newest: this batch's, see tracker.newest): that message was
// received, so sent, before the read, and so was this one. A message sent
// after it may belong to a queue created since: its value is read again, at
// most once per batch (one GetQueueAttributes per invocation and queue).
//
// A label is never later than the message's own send time allows: a
// message sent before the queue read was created belongs to an earlier
// incarnation, deleted since (received before `tenant.sh remove --force`,
// handled after a queue of the same name exists again: a delayed
// invocation, or a value read again mid-invocation). It is labelled "<" and
// that creation time (see before), so its records neither fence nor
// complete the new queue's copies of its event.
//
// Why not a time-to-live: SQS makes whoever deletes a queue wait 60 seconds
// before creating one of the same name, but for up to 60 seconds after the
// deletion a read may still succeed and return the old CreatedTimestamp. A
// value read then, kept for any time at all, would label the new queue's
// first messages with the old incarnation; their records would then count
// for no later copy of their events in the new queue, which would run them
// again. Sent times are SQS's own clock on both sides of the comparison.
func (h *Handler) incarnation(ctx context.Context, rec *events.SQSMessage, newest time.Time) (string, error) {
	if h.cfg.Queues == nil {
		return "", nil
	}
	url, err := queue.URLForARN(rec.EventSourceARN, h.cfg.QueueURLTemplate)
	if err != nil {
		return "", Permanent(err)
	}
	sent, ok := sentAt(rec)
	cached := func() (string, bool) {
		v, found := h.created.Load(url)
		if !found || !ok || sent.After(v.(incarnation).covers) {
			return "", false
		}
		return before(v.(incarnation).created, sent, ok), true
	}
	if created, hit := cached(); hit {
		return created, nil
	}
	// The batch's groups run at once: one of them reads, the others wait
	// for its value.
	h.reading.Lock()
	defer h.reading.Unlock()
	if created, hit := cached(); hit {
		return created, nil
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
	h.created.Store(url, incarnation{created: created, covers: newest})
	return before(created, sent, ok), nil
}

// before labels a message sent at sent (known: ok) with created, its
// queue's CreatedTimestamp (epoch seconds) as read, unless the message was
// sent before then: it then belongs to an earlier incarnation, deleted
// since, labelled "<"+created. SQS lets a deleted queue's name be created
// again only 60 s after the deletion, so no message of the old queue was
// sent in the new one's first second, and the seconds' truncation never
// mislabels one.
func before(created string, sent time.Time, ok bool) string {
	s, err := strconv.ParseInt(created, 10, 64)
	if err != nil || !ok || !sent.Before(time.Unix(s, 0)) {
		return created
	}
	return "<" + created
}

// incarnation is a cached CreatedTimestamp and the newest SentTimestamp of
// the batch it was read in: it holds for messages sent no later.
type incarnation struct {
	created string
	covers  time.Time
}

// requeued reports whether rec's queue has another incarnation than
// cached (it was deleted and created again), and caches the new one: one
// GetQueueAttributes, only for a fenced message.
func (h *Handler) requeued(ctx context.Context, rec *events.SQSMessage, cached string, newest time.Time) bool {
	if h.cfg.Queues == nil {
		return false
	}
	url, err := queue.URLForARN(rec.EventSourceARN, h.cfg.QueueURLTemplate)
	if err != nil {
		return false
	}
	h.created.Delete(url)
	now, err := h.incarnation(ctx, rec, newest)
	return err == nil && now != cached
}

// redriven reports whether rec was moved back from the DLQ: by
// scripts/replay (AttrReplayOf), or by a move task or a re-send that kept
// the dead letter's attributes (AttrReason). AWS's own redrive (StartMessageMoveTask, the console's
// "Start DLQ redrive") needs no mark: the moved message keeps its envelope,
// and with it the fence's Origin, which tells it from a later copy of the
// event the ingest enqueued (ledger.Fence.Origin).
func redriven(rec *events.SQSMessage) bool {
	_, replay := rec.MessageAttributes[AttrReplayOf]
	_, moved := rec.MessageAttributes[AttrReason]
	return replay || moved
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
func (h *Handler) body(ctx context.Context, rec *events.SQSMessage, until time.Time) ([]byte, error) {
	if !queue.IsPointer(rec.Body) {
		return []byte(rec.Body), nil
	}
	if h.cfg.Payloads == nil {
		return nil, Permanent(fmt.Errorf("%w: no payload bucket configured", queue.ErrPointer))
	}
	if !until.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, until)
		defer cancel()
	}
	body, err := h.cfg.Payloads.Get(ctx, rec.Body)
	if errors.Is(err, queue.ErrPointer) || errors.Is(err, queue.ErrPayloadGone) {
		return nil, Permanent(err)
	}
	return body, err
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
