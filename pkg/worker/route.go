package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/webhook"
)

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
	n, cerr := h.cfg.Ledger.FailedAttempt(fctx, rec.MessageId, receivesOf(rec))
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
// SentTimestamp, which SQS always sets) ends, less Config.ExpiryMargin,
// before at.
func (h *Handler) expiresBefore(rec *events.SQSMessage, at time.Time) bool {
	end, ok := h.retentionEnd(rec)
	return ok && !at.Before(end.Add(-h.cfg.ExpiryMargin))
}

// retentionEnd is when SQS would delete rec without sending it anywhere.
func (h *Handler) retentionEnd(rec *events.SQSMessage) (time.Time, bool) {
	sent, ok := sentAt(rec)
	return sent.Add(h.cfg.QueueRetention), ok
}

// expiring dead-letters a message that would otherwise wait past its
// queue's retention (a conversation blocked for days), with its age and
// why it was waiting as the reason.
func (h *Handler) expiring(ctx context.Context, t *tracker, i int, rec *events.SQSMessage, r result) result {
	end, _ := h.retentionEnd(rec)
	reason := fmt.Sprintf("SQS deletes it at %s; queued %s ago", end.UTC().Format(time.RFC3339), h.cfg.Now().Sub(end.Add(-h.cfg.QueueRetention)).Round(time.Minute))
	if r.env != nil && !r.env.ReceivedAt.IsZero() {
		reason += fmt.Sprintf("; received %s ago", h.cfg.Now().Sub(r.env.ReceivedAt).Round(time.Minute))
	}
	if r.err != nil {
		reason += "; waiting on: " + r.err.Error()
	}
	return h.deadLetter(ctx, t, i, rec, r, fmt.Errorf("%w: %s", ErrExpiring, reason))
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
	if r.env == nil {
		r.env = h.envelope(ctx, rec)
	}
	if r.env != nil {
		attrs[AttrEventKey] = r.env.Key
	}
	if size, ok := rec.MessageAttributes[queue.SizeAttribute]; ok {
		attrs[queue.SizeAttribute] = aws.ToString(size.StringValue) // the body is a pointer
	}
	// The event's outcome first, where every copy of its message reads it
	// before it acts: its unfinished effects refuse all but a replay, and
	// its records start their retention again, so they outlive the dead
	// letter. A copy of this message that finds it sends the dead letter
	// again (process), so a crash before the send below loses nothing.
	if len(r.touched) > 0 {
		bctx, bcancel := h.finish(ctx)
		err := h.cfg.Ledger.Bury(bctx, r.fence, r.touched, cause.Error())
		bcancel()
		if err != nil {
			return h.retry(r, errors.Join(cause, fmt.Errorf("dead-letter: record it in the ledger: %w", err)))
		}
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
	if len(r.touched) > 0 {
		// Best effort: without it a copy that comes back sends the dead
		// letter again, which the DLQ drops within five minutes.
		if err := h.cfg.Ledger.Buried(fctx, r.fence, r.touched); err != nil {
			r.err = errors.Join(cause, fmt.Errorf("record the dead letter sent: %w", err))
		}
	}
	r.outcome, r.failed = outDeadLettered, false
	return r
}

// envelope decodes rec's envelope for a dead letter's attributes, reading
// an offloaded body from S3 (nil when it cannot).
func (h *Handler) envelope(ctx context.Context, rec *events.SQSMessage) *envelope.Envelope {
	body := []byte(rec.Body)
	if _, ok := rec.MessageAttributes[queue.SizeAttribute]; ok {
		if h.cfg.Payloads == nil {
			return nil
		}
		fctx, cancel := h.finish(ctx)
		defer cancel()
		b, err := h.cfg.Payloads.Get(fctx, rec.Body)
		if err != nil {
			return nil
		}
		body = b
	}
	env, err := envelope.Decode(body)
	if err != nil {
		return nil
	}
	return env
}
