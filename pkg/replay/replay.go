// Package replay lists a tenant's dead-lettered messages with the reasons
// the worker recorded, and moves them back to the source queue once the
// cause is fixed.
//
// Order: a DLQ message keeps its original MessageGroupId, and SQS FIFO
// hands out a group's messages in order, one batch at a time, holding the
// rest of the group back while any of its messages is in flight. Redrive
// therefore sends each message back under the same group, in DLQ order,
// and deletes it before the group's next messages can be received. When a
// message stays (it does not match the filter, or sending it failed), the
// rest of its conversation stays too: moving later events past it would
// reorder the conversation.
//
// Each moved message gets a new deduplication id (derived from its DLQ
// message id), so SQS does not drop it as a duplicate of the original send,
// yet a redrive interrupted and rerun within five minutes does not send it
// twice. Replaying an event whose effects already completed is a no-op:
// the worker's effect ledger skips them.
//
// Listing receives messages too (SQS has no peek), so it sees the head of
// each conversation only — up to ten messages per group — and makes every
// message visible again when it is done. Queue attributes give the total.
package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/internal/epoch"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/webhook"
	"github.com/hookpack/hookpack/pkg/worker"
)

// AttrReplayOf marks a moved message with the DLQ message id it came from;
// the worker reads it (worker.AttrReplayOf).
const AttrReplayOf = worker.AttrReplayOf

// sqsAPI receives from the DLQ, deletes moved messages and makes the
// others visible again.
type sqsAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// sender sends to the source queue (queue.SQS).
type sender interface {
	Send(ctx context.Context, url string, m queue.Message) (string, error)
}

// Filter selects messages; empty fields match everything. A message whose
// envelope cannot be decoded matches only an empty Type and a Conversation
// equal to its group id.
type Filter struct {
	// Conversation matches the envelope's conversation or the message group.
	Conversation string
	// Type matches the envelope's event type.
	Type string
}

func (f Filter) match(it Item) bool {
	return (f.Conversation == "" || f.Conversation == it.Conversation || f.Conversation == it.GroupID) &&
		(f.Type == "" || f.Type == it.Type)
}

// Status of an item in a result.
const (
	StatusListed    = "listed"
	StatusMoved     = "moved"
	StatusWouldMove = "would_move"
	StatusHeld      = "held"
)

// Item is one DLQ message.
type Item struct {
	// MessageID is the DLQ message's id.
	MessageID string `json:"messageId"`
	GroupID   string `json:"groupId"`
	// Reason, Attempts, OriginalMessageID and FailedAt are what the worker
	// recorded; empty for messages SQS redrove after maxReceiveCount.
	Reason            string    `json:"reason"`
	Attempts          string    `json:"attempts,omitempty"`
	OriginalMessageID string    `json:"originalMessageId,omitempty"`
	FailedAt          string    `json:"failedAt,omitempty"`
	SentAt            time.Time `json:"sentAt"`
	// EventKey, EventID, Type and Conversation come from the envelope, when
	// valid (EventID is what the ingest logged: for providers whose id is an
	// unsigned header, such as GitHub's X-GitHub-Delivery, it is not part of
	// the key).
	EventKey     string `json:"eventKey,omitempty"`
	EventID      string `json:"eventId,omitempty"`
	Type         string `json:"type,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	Status       string `json:"status"`
	// Note says why a message was held, or what failed.
	Note string `json:"note,omitempty"`
}

// Options tune a Replayer. Zero values take the defaults.
type Options struct {
	// Visibility hides received messages for the run (default 5 minutes,
	// longer than any run; they are made visible again at the end).
	Visibility time.Duration
	// Wait is the long-poll wait of each receive (default 1 s; an empty
	// receive ends the run).
	Wait time.Duration
	// Payloads reads the envelopes of pointer messages (bodies ingest put
	// in the payload bucket, queue.Payloads), so their type and
	// conversation can be listed and filtered on. Without it they show
	// only what their attributes say; a redrive moves them all the same.
	Payloads interface {
		Get(ctx context.Context, pointerBody string) ([]byte, error)
	}
}

// Replayer lists and redrives DLQ messages.
type Replayer struct {
	sqs  sqsAPI
	send sender
	opts Options
}

// New returns a replayer.
func New(client sqsAPI, send sender, o Options) *Replayer {
	if o.Visibility <= 0 {
		o.Visibility = 5 * time.Minute
	}
	if o.Wait < 0 {
		o.Wait = 0
	} else if o.Wait == 0 {
		o.Wait = time.Second
	}
	return &Replayer{sqs: client, send: send, opts: o}
}

// List returns the DLQ messages matching f that can be seen: the head of
// each conversation (see the package comment). Every received message is
// made visible again. It returns a wrapped AWS error.
func (r *Replayer) List(ctx context.Context, dlqURL string, f Filter) ([]Item, error) {
	items, err := r.run(ctx, dlqURL, func(ctx context.Context, it *Item, _ types.Message) bool {
		it.Status = StatusListed
		return false
	})
	var out []Item
	for _, it := range items {
		if f.match(it) {
			out = append(out, it)
		}
	}
	return out, err
}

// Redrive moves the DLQ messages matching f back to sourceURL, preserving
// each conversation's order (see the package comment). With dryRun nothing
// moves; the result says what would. It returns every item seen with its
// status, and a wrapped AWS error (items moved before it stay moved).
func (r *Replayer) Redrive(ctx context.Context, dlqURL, sourceURL string, f Filter, dryRun bool) ([]Item, error) {
	held := map[string]string{} // group → why it stays
	var sendErrs []error
	items, err := r.run(ctx, dlqURL, func(ctx context.Context, it *Item, m types.Message) bool {
		switch {
		case held[it.GroupID] != "":
			it.Status, it.Note = StatusHeld, held[it.GroupID]
			return false
		case !f.match(*it):
			it.Status, it.Note = StatusHeld, "does not match the filter"
			held[it.GroupID] = "behind message " + it.MessageID + ", which does not match the filter"
			return false
		case dryRun:
			it.Status = StatusWouldMove
			return false
		}
		attrs := map[string]string{AttrReplayOf: it.MessageID}
		if size, ok := m.MessageAttributes[queue.SizeAttribute]; ok {
			attrs[queue.SizeAttribute] = aws.ToString(size.StringValue) // the body is a pointer to S3
		}
		_, err := r.send.Send(ctx, sourceURL, queue.Message{
			GroupID:         it.GroupID,
			DeduplicationID: webhook.DeduplicationID("replay#" + it.MessageID),
			Body:            []byte(aws.ToString(m.Body)),
			Attributes:      attrs,
		})
		if err != nil {
			sendErrs = append(sendErrs, err)
			it.Status, it.Note = StatusHeld, "send failed: "+err.Error()
			held[it.GroupID] = "behind message " + it.MessageID + ", which could not be sent"
			return false
		}
		if _, err := r.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			// Sent but still in the DLQ: a rerun within five minutes is
			// deduplicated by SQS, a later one by the effect ledger.
			sendErrs = append(sendErrs, fmt.Errorf("delete %s from the DLQ after moving it: %w", it.MessageID, err))
			it.Status, it.Note = StatusMoved, "moved, but still in the DLQ: "+err.Error()
			held[it.GroupID] = "behind message " + it.MessageID + ", which is still in the DLQ"
			return false
		}
		it.Status = StatusMoved
		return true
	})
	return items, errors.Join(append([]error{err}, sendErrs...)...)
}

// run receives until nothing more can be received, calls visit for each
// message in order (visit returns whether the message is gone), and makes
// every message that stays visible again.
func (r *Replayer) run(ctx context.Context, dlqURL string, visit func(context.Context, *Item, types.Message) bool) ([]Item, error) {
	var items []Item
	var stay []types.Message
	seen := map[string]bool{}
	var err error
	for err == nil {
		var out *sqs.ReceiveMessageOutput
		out, err = r.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(dlqURL),
			MaxNumberOfMessages:         10,
			VisibilityTimeout:           int32(r.opts.Visibility / time.Second),
			WaitTimeSeconds:             int32(r.opts.Wait / time.Second),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			err = fmt.Errorf("receive from %s: %w", dlqURL, err)
			break
		}
		fresh := 0
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if seen[id] { // its visibility ran out during the run
				stay = append(stay, m)
				continue
			}
			seen[id] = true
			fresh++
			it := r.item(ctx, m)
			if !visit(ctx, &it, m) {
				stay = append(stay, m)
			}
			items = append(items, it)
		}
		if fresh == 0 {
			break
		}
	}
	if rerr := r.release(context.WithoutCancel(ctx), dlqURL, stay); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return items, err
}

// release makes messages visible again, ten per request.
func (r *Replayer) release(ctx context.Context, dlqURL string, msgs []types.Message) error {
	var errs []error
	for len(msgs) > 0 {
		n := min(len(msgs), 10)
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, n)
		for i, m := range msgs[:n] {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		out, err := r.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(dlqURL), Entries: entries})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("make messages visible again in %s: %w", dlqURL, err))
		case len(out.Failed) > 0:
			errs = append(errs, fmt.Errorf("make messages visible again in %s: %d refused", dlqURL, len(out.Failed)))
		}
		msgs = msgs[n:]
	}
	return errors.Join(errs...)
}

func (r *Replayer) item(ctx context.Context, m types.Message) Item {
	attr := func(name string) string {
		if v, ok := m.MessageAttributes[name]; ok {
			return aws.ToString(v.StringValue)
		}
		return ""
	}
	it := Item{
		MessageID:         aws.ToString(m.MessageId),
		GroupID:           attr(worker.AttrGroupID),
		Reason:            attr(worker.AttrReason),
		Attempts:          attr(worker.AttrAttempts),
		OriginalMessageID: attr(worker.AttrMessageID),
		FailedAt:          attr(worker.AttrFailedAt),
		EventKey:          attr(worker.AttrEventKey),
	}
	if it.GroupID == "" {
		it.GroupID = m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	}
	if it.Reason == "" {
		it.Reason = "moved by SQS after maxReceiveCount receives (no reason recorded)"
	}
	if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		it.SentAt = epoch.FromMillis(ms)
	}
	body := []byte(aws.ToString(m.Body))
	if _, pointer := m.MessageAttributes[queue.SizeAttribute]; pointer {
		body = nil
		if r.opts.Payloads == nil {
			it.Note = "body in the payload bucket (give the bucket to see its type)"
		} else if b, err := r.opts.Payloads.Get(ctx, aws.ToString(m.Body)); err != nil {
			it.Note = "body in the payload bucket: " + err.Error()
		} else {
			body = b
		}
	}
	if env, err := envelope.Decode(body); err == nil {
		it.EventKey, it.EventID, it.Type, it.Conversation = env.Key, env.EventID, env.Type, env.Conversation
	}
	return it
}
