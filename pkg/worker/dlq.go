package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Message attributes of a dead-lettered message. Messages SQS itself
// redrove after maxReceiveCount carry none of them.
const (
	// AttrReason is why the worker gave up (the permanent error).
	AttrReason = "hookpack.reason"
	// AttrAttempts is the number of attempts that failed, as counted in
	// the ledger (absent when the count could not be recorded). Receives in
	// which the message only waited behind an earlier failure of its
	// conversation are not attempts.
	AttrAttempts = "hookpack.attempts"
	// AttrGroupID is the original MessageGroupId (the DLQ message keeps it
	// as its own group too, so the conversation's order survives).
	AttrGroupID = "hookpack.groupId"
	// AttrMessageID is the original SQS message id.
	AttrMessageID = "hookpack.messageId"
	// AttrFailedAt is when the worker dead-lettered it (RFC 3339, UTC).
	AttrFailedAt = "hookpack.failedAt"
	// AttrEventKey is the event's idempotency key (queue.AttrEventKey),
	// from its envelope or, when the body could not be read, from the
	// message's identity attributes, which the dead letter keeps
	// (queue.Identity).
	AttrEventKey = queue.AttrEventKey
	// AttrReplayOf marks a message redriven from the DLQ (package replay)
	// with the DLQ message id it came from. Its effect claims never count an
	// earlier message's unfinished claim as done (ledger.Fence.Replay).
	AttrReplayOf = "hookpack.replayOf"
)

// maxReasonBytes keeps the reason attribute small next to a body that may
// be near the queue's size limit.
const maxReasonBytes = 512

// DLQURL returns the dead-letter queue of a source queue URL, by the naming
// of provision.QueuePair (pkg/local) and template.yaml: "…/<name>.fifo" becomes
// "…/<name>-dlq.fifo". It returns an error wrapping ErrNoDLQ for a URL that
// is not a FIFO queue's or that already names a dead-letter queue.
func DLQURL(sourceURL string) (string, error) {
	base, ok := strings.CutSuffix(sourceURL, ".fifo")
	name := base[strings.LastIndexByte(base, '/')+1:]
	if !ok || name == "" || strings.HasSuffix(name, "-dlq") {
		return "", fmt.Errorf("%w: %q is not a FIFO source queue URL", ErrNoDLQ, sourceURL)
	}
	return base + "-dlq.fifo", nil
}

// attrText makes s a valid SQS attribute value of at most about n bytes:
// valid UTF-8 without the control characters SQS rejects (a reason SQS
// refused would make the message impossible to dead-letter).
func attrText(s string, n int) string {
	cut := len(s) > n
	if cut {
		s = s[:n]
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if cut {
		s += "…"
	}
	return s
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
			if fence, err = h.fenceOf(ctx, rec, id, group, t.newest); err != nil {
				return h.retry(*r, errors.Join(cause, fmt.Errorf("dead-letter: %w", err)))
			}
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
		r.heldByCopy = fence.Wrote(ce.Record)
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
