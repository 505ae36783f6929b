package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/webhook"
)

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

// retentionEnd is when SQS would delete rec without sending it anywhere.
func (h *Handler) retentionEnd(rec *events.SQSMessage) (time.Time, bool) {
	sent, ok := sentAt(rec)
	return sent.Add(h.cfg.QueueRetention), ok
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
func (h *Handler) deadLetter(ctx context.Context, m *message, cause error) result {
	r, rec, t := &m.r, m.rec, m.t
	r.err = cause
	if !t.reserve(m.i) {
		// The batch was cut off: the message is reported failed, so it must
		// not reach the DLQ as well.
		r.outcome, r.failed = outTimedOut, true
		return *r
	}
	source, err := queue.URLForARN(rec.EventSourceARN, h.cfg.QueueURLTemplate)
	if err != nil {
		return h.retry(*r, errors.Join(cause, fmt.Errorf("dead-letter: %w", err)))
	}
	dlq, err := DLQURL(source)
	if err != nil {
		return h.retry(*r, errors.Join(cause, fmt.Errorf("dead-letter: %w", err)))
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
	// The event it names, from its envelope or, when the body cannot be
	// read (an offloaded one denied or gone), from its attributes: the dead
	// letter keeps them, so a copy of it re-sent with them names its event.
	if !r.known {
		// Its read failed (a transient S3 error, its answer lost): one more
		// try, so the dead letter names its event whenever it can.
		h.readNow(ctx, m)
	}
	id, known := r.id, r.known
	if known {
		maps.Copy(attrs, id.Attributes())
	}
	if size, ok := rec.MessageAttributes[queue.SizeAttribute]; ok {
		attrs[queue.SizeAttribute] = aws.ToString(size.StringValue) // the body is a pointer
	}
	if s, ok := rec.MessageAttributes[queue.AttrStream]; ok && s.StringValue != nil {
		// Its stream, whether or not its event is known: a copy re-sent
		// without it would be taken for every destination's (the search's
		// streamless copy) and deliver again where its stream's deletion
		// completed the event.
		attrs[queue.AttrStream] = aws.ToString(s.StringValue)
	}
	// The event's outcome first, on its record, where every copy of it
	// reads it before it acts (Event.begin): its unfinished effects refuse
	// all but a replay, its completed ones carry the mark, and its records
	// start their retention again, so they outlive the dead letter. A copy
	// of this message that finds it sends the dead letter again (process),
	// so a crash before the send below loses nothing. A message dead-lettered
	// before it claimed anything (behind an expiring message, too old, its
	// body unreadable) buries its event's record under its own fence.
	keys, fence := r.touched, r.fence
	if known {
		event := ledger.Key{Tenant: id.Tenant, Event: id.EventKey, Effect: eventRecord(id.Stream)}
		if !slices.Contains(keys, event) {
			keys = append([]ledger.Key{event}, keys...)
		}
		if fence.Sequence == "" {
			fence = h.fenceOf(ctx, rec, id, group, t.newest)
		}
		fence.HeldFrom = r.heldFrom
	}
	bctx, bcancel := h.finish(ctx)
	if len(keys) > 0 {
		err = h.cfg.Ledger.Bury(bctx, fence, keys, r.leases, cause.Error())
	}
	bcancel()
	var ce *ledger.ConflictError
	if errors.Is(err, ledger.ErrCompleted) {
		qctx, qcancel := h.finish(ctx)
		requeued := errors.As(err, &ce) && ce.Record.Status == ledger.StatusInProgress && h.requeued(qctx, rec, fence.Queue, t.newest)
		qcancel()
		if requeued {
			// Done only by a deletion in another incarnation of the queue:
			// taken again at once under the new one.
			r.outcome, r.failed, r.setVisibility, r.err = outDeadline, true, true, errors.Join(errRequeued, cause)
			return *r
		}
		// A later copy of an event an earlier message completed: done is
		// terminal, so the copy is deleted, never dead-lettered.
		r.outcome, r.failed, r.err = outDuplicate, false, fmt.Errorf("not dead-lettered, its event is done (%w): %w", err, cause)
		return *r
	}
	if errors.As(err, &ce) {
		// A concurrent copy of the message (a batch invoked twice) is
		// running an effect: it decides; this copy comes back after its lease.
		r.heldByCopy = fence.SameMessage(ce.Record.Fence)
		return h.retry(*r, RetryAfter(errors.Join(cause, fmt.Errorf("dead-letter: %w", err)), ce.Record.LeaseExpires.Sub(h.cfg.Now())))
	}
	if err != nil {
		return h.retry(*r, errors.Join(cause, fmt.Errorf("dead-letter: record it in the ledger: %w", err)))
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
		return h.retry(*r, errors.Join(cause, fmt.Errorf("dead-letter: %w", err)))
	}
	// Best effort: without it a copy that comes back sends the dead letter
	// again, which the DLQ drops within five minutes.
	if len(keys) > 0 {
		err = h.cfg.Ledger.Buried(fctx, fence, keys)
	}
	if err != nil {
		r.err = errors.Join(cause, fmt.Errorf("record the dead letter sent: %w", err))
	}
	r.outcome, r.failed = outDeadLettered, false
	return *r
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

// fenceOf is the fence of message rec of event id in its conversation
// group, for a dead letter sent before the message claimed anything: its
// place in the conversation and its queue's incarnation (so that the event's
// record tells a done event from one to bury), or, when those cannot be
// had, the fence of an unknown place, which buries without comparing.
func (h *Handler) fenceOf(ctx context.Context, rec *events.SQSMessage, id queue.Identity, group string, newest time.Time) ledger.Fence {
	f, err := ledger.NewFence(id.Tenant, group, rec.Attributes["SequenceNumber"], receivesOf(rec), redriven(rec))
	if err != nil {
		f = ledger.Fence{Tenant: id.Tenant, Conversation: group}
	}
	f.MessageID, f.Event = rec.MessageId, eventRecord(id.Stream)
	if !id.ReceivedAt.IsZero() {
		f.Origin = id.ReceivedAt.UTC().Format(time.RFC3339Nano)
	}
	if f.Sequence != "" {
		fctx, cancel := h.finish(ctx)
		f.Queue, _ = h.incarnation(fctx, rec, newest)
		cancel()
	}
	return f
}

// readNow reads m for a verdict decided before it ran (its log line and
// dead letter name its event), within the clean-up budget; why it has no
// envelope is for that verdict, decided already, to say.
func (h *Handler) readNow(ctx context.Context, m *message) {
	fctx, cancel := h.finish(ctx)
	defer cancel()
	_ = h.read(fctx, m, time.Time{})
}
