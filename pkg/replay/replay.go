// Package replay lists a tenant's dead-lettered messages with the reasons
// the worker recorded, and moves them back to the source queue once the
// cause is fixed.
//
// Order: a DLQ message keeps its original MessageGroupId, and SQS FIFO
// hands out a group's messages in order, one batch at a time, holding the
// rest of the group back while any of its messages is in flight. Redrive
// therefore sends each message back under the same group, in DLQ order,
// and deletes it before the group's next messages can be received. When a
// message stays (it does not match the filter, sending it failed, …), the
// rest of its conversation stays too: moving later events past it would
// reorder the conversation.
//
// Once: a redrive moves what was dead-lettered before it started, each
// message and each event at most once. An event the target still refuses
// comes back to the DLQ at once as a new message (a new id, a SentTimestamp
// after the start); the redrive holds it, as AWS's own move task moves only
// the messages it counted when it started, and the run ends when receives
// yield nothing dead-lettered before the start that it has not seen. The
// start is the client's clock and SentTimestamp the queue's: with a client
// clock ahead of SQS's, a copy may look older than the start, and the
// event rule (one move per event key and stream) still holds it. An
// event dead-lettered at two destinations has a dead letter on each one's
// stream: each moves once.
//
// Streams: a dead letter keeps the hookpack.stream attribute of its message
// (queue.AttrStream: the destination it delivers to) and a redrive sends it
// back with it, on its stream's group, so it delivers to that destination
// alone; Filter.Destination selects one destination's dead letters.
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
// Each receive carries its own ReceiveRequestAttemptId, so the SDK's retry
// of a receive whose answer was lost gets the same messages back instead
// of finding them hidden for the run's visibility timeout.
package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

var (
	// ErrNotReleased: SQS refused to make some received messages visible
	// again; they stay hidden until their visibility timeout ends.
	ErrNotReleased = errors.New("messages left hidden")
	// ErrBudget: the run stopped receiving at Options.Budget; what it did
	// not reach stays in the DLQ for the next run.
	ErrBudget = errors.New("time budget spent")
)

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
// equal to its group id, and an Event equal to its hookpack.eventKey
// attribute.
type Filter struct {
	// Destination matches a dead letter whose hookpack.stream names it
	// (Item.Destination). A dead letter that names no destination never
	// matches a named one: the custom effects' stream, and one without the
	// attribute (a targetUrl tenant's, or queued before its tenant had
	// streams), which delivers to every destination that selects it.
	Destination string
	// Conversation matches the envelope's conversation or the message group.
	Conversation string
	// Type matches the envelope's event type.
	Type string
	// Event is any id `make inspect` takes: the idempotency key
	// ("tenant#provider#id"), its id part (the sender's id when it signs
	// one), the eventId the ingest logged (the sender's id), or one
	// ':'-separated part of that eventId (Shopify's topic:id).
	Event string
	// Keys are event keys Event resolves to beyond what a dead letter
	// carries (a webhook-id, an effect's Idempotency-Key, an id only the
	// ingest's log pairs with its key): scripts/replay sets them from
	// inspect's lookup of Event. A message whose key is one of them
	// matches as if Event named it.
	Keys []string
	// Messages are DLQ message ids: what a dry run listed, so that the move
	// it previews takes those messages and no later one.
	Messages []string
}

// Match reports whether f selects it.
func (f Filter) Match(it Item) bool {
	return (len(f.Messages) == 0 || slices.Contains(f.Messages, it.MessageID)) &&
		(f.Destination == "" || f.Destination == it.Destination) &&
		(f.Conversation == "" || f.Conversation == it.Conversation || f.Conversation == it.GroupID) &&
		(f.Type == "" || f.Type == it.Type) &&
		(f.Event == "" && len(f.Keys) == 0 ||
			f.Event != "" && (f.Event == it.EventKey || f.Event == it.EventID || f.Event == keyID(it.EventKey) ||
				it.EventID != "" && slices.Contains(strings.Split(it.EventID, ":"), f.Event)) ||
			it.EventKey != "" && slices.Contains(f.Keys, it.EventKey))
}

// keyID is the id part of an idempotency key "tenant#provider#id".
func keyID(key string) string {
	parts := strings.SplitN(key, "#", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[2]
}

// Status of an item in a result.
const (
	StatusListed    = "listed"
	StatusMoved     = "moved"
	StatusWouldMove = "would_move"
	StatusHeld      = "held"
)

// Why a redrive holds a message (Item.Note starts with one of them).
const (
	NoteAfterStart  = "dead-lettered after the redrive started"
	NoteNoSentTime  = "no SentTimestamp: cannot tell whether it was dead-lettered before the redrive started"
	NoteFilter      = "does not match the filter"
	NoteStream      = "not of the destination's stream"
	NoteBehind      = "behind a held message of its conversation"
	NoteSameEvent   = "the same event as a message moved in this run"
	NoteSendFailed  = "send failed"
	NoteStillInDLQ  = "moved, but still in the DLQ"
	NoteStillHidden = "left hidden until its visibility timeout"
)

// once is what a run moves at most one message of: an event on one
// stream (each destination's dead letter of an event is its own).
func (it Item) once() string { return it.EventKey + "|" + it.Stream }

// Item is one DLQ message.
type Item struct {
	// MessageID is the DLQ message's id.
	MessageID string `json:"messageId"`
	GroupID   string `json:"groupId"`
	// Reason, Attempts, OriginalMessageID and FailedAt are what the worker
	// recorded; empty for messages SQS redrove after maxReceiveCount.
	Reason            string `json:"reason"`
	Attempts          string `json:"attempts,omitempty"`
	OriginalMessageID string `json:"originalMessageId,omitempty"`
	FailedAt          string `json:"failedAt,omitempty"`
	// SentAt is when the message entered the DLQ (SentTimestamp).
	SentAt time.Time `json:"sentAt"`
	// EventKey, EventID, Type and Conversation come from the envelope, when
	// valid (EventID is what the ingest logged: for providers whose id is an
	// unsigned header, such as GitHub's X-GitHub-Delivery, it is not part of
	// the key); EventKey falls back on the worker's hookpack.eventKey.
	EventKey     string `json:"eventKey,omitempty"`
	EventID      string `json:"eventId,omitempty"`
	Type         string `json:"type,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	// Stream is the dead letter's hookpack.stream attribute (queue.AttrStream,
	// which a dead letter keeps): "forward:<name>", "effects" or
	// "effects,forward:<name>"; empty for a message without it, which
	// delivers to every destination that selects its event and runs its
	// custom effects (a targetUrl tenant's, or queued before its tenant
	// had streams). Destination is the destination it names, if any.
	Stream      string `json:"stream,omitempty"`
	Destination string `json:"destination,omitempty"`
	Status      string `json:"status"`
	// Note says why a message was held, or what failed.
	Note string `json:"note,omitempty"`
}

// Options tune a Replayer. Zero values take the defaults.
type Options struct {
	// Visibility hides received messages for the run (default 5 minutes,
	// longer than any run; they are made visible again at the end).
	Visibility time.Duration
	// Wait is the long-poll wait of each receive (default 1 s; a receive
	// with nothing new from before the start ends the run).
	Wait time.Duration
	// Budget bounds a run's receiving (default 10 minutes, measured on
	// Now): past it the run stops with ErrBudget.
	Budget time.Duration
	// Now is the clock (default time.Now). A redrive moves only messages
	// whose SentTimestamp is before Now at its start.
	Now func() time.Time
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
	if o.Budget <= 0 {
		o.Budget = 10 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Replayer{sqs: client, send: send, opts: o}
}

// List returns the DLQ messages matching f that can be seen: the head of
// each conversation (see the package comment). Every received message is
// made visible again. It returns a wrapped AWS error, or one wrapping
// ErrNotReleased or ErrBudget, with the items seen so far.
func (r *Replayer) List(ctx context.Context, dlqURL string, f Filter) ([]Item, error) {
	items, err := r.run(ctx, dlqURL, func(ctx context.Context, it *Item, _ types.Message) bool {
		it.Status = StatusListed
		return false
	})
	var out []Item
	for _, it := range items {
		if f.Match(it) {
			out = append(out, it)
		}
	}
	return out, err
}

// plan is what a redrive has decided so far: the groups that stay and the
// events moved.
type plan struct {
	start  time.Time
	filter Filter
	held   map[string]string // group → the held message's id
	moved  map[string]string // Item.once → the moved message's id
}

// hold decides, without side effects, why a redrive leaves it in the DLQ,
// or "" to move it. The first reason that applies is given.
func (p *plan) hold(it Item) string {
	switch {
	case it.SentAt.IsZero():
		return NoteNoSentTime
	case !it.SentAt.Before(p.start):
		return NoteAfterStart + " (at " + it.SentAt.Format(time.RFC3339Nano) + ")"
	case p.held[it.GroupID] != "":
		return NoteBehind + " (" + p.held[it.GroupID] + ")"
	case p.filter.Destination != "" && it.Destination != p.filter.Destination:
		return NoteStream + " (" + it.StreamLabel() + ")"
	case !p.filter.Match(it):
		return NoteFilter
	case it.EventKey != "" && p.moved[it.once()] != "":
		return NoteSameEvent + " (" + p.moved[it.once()] + ")"
	}
	return ""
}

// Redrive moves the DLQ messages matching f back to sourceURL, preserving
// each conversation's order and moving each message and event at most
// once (see the package comment). With dryRun nothing moves; the result
// says what would. It returns every item seen with its status, and a
// wrapped AWS error, or one wrapping ErrNotReleased or ErrBudget (items
// moved before it stay moved).
func (r *Replayer) Redrive(ctx context.Context, dlqURL, sourceURL string, f Filter, dryRun bool) ([]Item, error) {
	p := &plan{start: r.opts.Now(), filter: f, held: map[string]string{}, moved: map[string]string{}}
	var sendErrs []error
	hold := func(it *Item, note string) bool {
		it.Status, it.Note = StatusHeld, note
		p.held[it.GroupID] = it.MessageID
		return false
	}
	items, err := r.runFrom(ctx, p.start, dlqURL, func(ctx context.Context, it *Item, m types.Message) bool {
		if note := p.hold(*it); note != "" {
			return hold(it, note)
		}
		if dryRun {
			it.Status = StatusWouldMove
			if it.EventKey != "" {
				p.moved[it.once()] = it.MessageID
			}
			return false
		}
		attrs := map[string]string{AttrReplayOf: it.MessageID}
		// The pointer's size and the event's identity go with the body, so
		// the worker names the event even when it cannot read the body.
		// Its stream too: a destination's dead letter goes back to that
		// destination alone.
		for _, name := range []string{queue.SizeAttribute, queue.AttrTenant, queue.AttrEventKey, queue.AttrConversation, queue.AttrReceivedAt, queue.AttrStream} {
			if v, ok := attrText(m.MessageAttributes, name); ok {
				attrs[name] = v
			}
		}
		_, err := r.send.Send(ctx, sourceURL, queue.Message{
			GroupID:         it.GroupID,
			DeduplicationID: webhook.DeduplicationID("replay#" + it.MessageID),
			Body:            []byte(aws.ToString(m.Body)),
			Attributes:      attrs,
		})
		if err != nil {
			sendErrs = append(sendErrs, fmt.Errorf("send %s: %w", it.MessageID, err))
			return hold(it, NoteSendFailed+": "+err.Error())
		}
		if it.EventKey != "" {
			p.moved[it.once()] = it.MessageID
		}
		if _, err := r.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			// Sent but still in the DLQ: a rerun within five minutes is
			// deduplicated by SQS, a later one by the effect ledger.
			sendErrs = append(sendErrs, fmt.Errorf("delete %s from the DLQ after moving it: %w", it.MessageID, err))
			hold(it, NoteStillInDLQ+": "+err.Error())
			it.Status = StatusMoved
			return false
		}
		it.Status = StatusMoved
		return true
	})
	return items, errors.Join(append([]error{err}, sendErrs...)...)
}

// run is runFrom starting now.
func (r *Replayer) run(ctx context.Context, dlqURL string, visit func(context.Context, *Item, types.Message) bool) ([]Item, error) {
	return r.runFrom(ctx, r.opts.Now(), dlqURL, visit)
}

// runFrom receives until a receive yields no message the run has not
// seen, or two in a row yield none sent before start (or until the budget
// is spent), calls visit
// once per message id, in order (visit returns whether the message is
// gone), and makes every message that stays visible again.
func (r *Replayer) runFrom(ctx context.Context, start time.Time, dlqURL string, visit func(context.Context, *Item, types.Message) bool) ([]Item, error) {
	var items []Item
	var stay []types.Message
	index := map[string]int{}  // message id → its item
	stayAt := map[string]int{} // message id → its place in stay
	end := start.Add(r.opts.Budget)
	quiet := 0 // passes in a row with nothing dead-lettered before the start
	var err error
	for err == nil {
		if !r.opts.Now().Before(end) {
			err = fmt.Errorf("receive from %s: stopped after %v: %w", dlqURL, r.opts.Budget, ErrBudget)
			break
		}
		var out *sqs.ReceiveMessageOutput
		out, err = r.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(dlqURL),
			MaxNumberOfMessages:         10,
			VisibilityTimeout:           int32(r.opts.Visibility / time.Second),
			WaitTimeSeconds:             int32(r.opts.Wait / time.Second),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameSentTimestamp, types.MessageSystemAttributeNameMessageGroupId},
			MessageAttributeNames:       []string{"All"},
			ReceiveRequestAttemptId:     aws.String(attemptID()),
		})
		if err != nil {
			err = fmt.Errorf("receive from %s: %w", dlqURL, err)
			break
		}
		fresh, older := 0, 0 // unseen messages, and those dead-lettered before the start
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if _, seen := index[id]; seen { // its visibility ran out during the run
				if i, ok := stayAt[id]; ok {
					stay[i] = m // only the newest receipt handle is valid
				} else {
					stayAt[id] = len(stay)
					stay = append(stay, m)
				}
				continue
			}
			fresh++
			it := r.item(ctx, m)
			if !it.SentAt.IsZero() && it.SentAt.Before(start) {
				older++
			}
			if !visit(ctx, &it, m) {
				stayAt[id] = len(stay)
				stay = append(stay, m)
			}
			index[id] = len(items)
			items = append(items, it)
		}
		// Only new ones: SQS FIFO may fill a receive from one group, so
		// one more pass looks past the group they hold back (in flight).
		if quiet = quiet + 1; older > 0 {
			quiet = 0
		}
		if fresh == 0 || quiet == 2 {
			break
		}
	}
	refused, rerr := r.release(context.WithoutCancel(ctx), dlqURL, stay)
	for id, why := range refused {
		if i, ok := index[id]; ok {
			items[i].Note = strings.TrimPrefix(items[i].Note+"; ", "; ") + NoteStillHidden + ": " + why
		}
	}
	return items, errors.Join(err, rerr)
}

// attemptID returns a new ReceiveRequestAttemptId: one per receive, which
// the SDK's retries of it send again.
func attemptID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// release makes messages visible again, ten per request. It returns the
// ids of the messages SQS refused, with why, and an error wrapping
// ErrNotReleased that names them, or a wrapped AWS error.
func (r *Replayer) release(ctx context.Context, dlqURL string, msgs []types.Message) (map[string]string, error) {
	var errs []error
	refused := map[string]string{}
	for len(msgs) > 0 {
		n := min(len(msgs), 10)
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, n)
		for i, m := range msgs[:n] {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		out, err := r.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(dlqURL), Entries: entries})
		if err != nil {
			for _, m := range msgs[:n] {
				refused[aws.ToString(m.MessageId)] = err.Error()
			}
			errs = append(errs, fmt.Errorf("make %d message(s) visible again in %s: %w", n, dlqURL, err))
		} else {
			var ids []string
			for _, f := range out.Failed {
				i, convErr := strconv.Atoi(aws.ToString(f.Id))
				if convErr != nil || i < 0 || i >= n {
					continue
				}
				id := aws.ToString(msgs[i].MessageId)
				refused[id] = aws.ToString(f.Code) + " " + aws.ToString(f.Message)
				ids = append(ids, id+" ("+refused[id]+")")
			}
			if len(out.Failed) > 0 {
				errs = append(errs, fmt.Errorf("%w: %s refused to make %d message(s) visible again: %s",
					ErrNotReleased, dlqURL, len(out.Failed), strings.Join(ids, ", ")))
			}
		}
		msgs = msgs[n:]
	}
	return refused, errors.Join(errs...)
}

// Labels of the dead letters that name no destination (Item.StreamLabel).
const (
	LabelEvery   = "(every destination)"
	LabelEffects = "(custom effects)"
)

// StreamLabel names the stream it was dead-lettered from, as the tools
// show it: its destination, LabelEffects for the custom effects' stream,
// LabelEvery for a message without hookpack.stream, or the attribute as it
// is when it cannot be read.
func (it Item) StreamLabel() string {
	switch {
	case it.Destination != "":
		return it.Destination
	case it.Stream == "":
		return LabelEvery
	}
	if s, err := queue.ParseStream(it.Stream); err == nil && s.Effects {
		return LabelEffects
	}
	return "(" + queue.AttrStream + " " + strconv.Quote(it.Stream) + ")"
}

// attrText returns the text of message attribute name, a String or a
// Binary (the queue package sends text SQS refuses as a String as Binary).
func attrText(attrs map[string]types.MessageAttributeValue, name string) (string, bool) {
	v, ok := attrs[name]
	switch {
	case !ok:
		return "", false
	case v.StringValue != nil:
		return *v.StringValue, true
	case v.BinaryValue != nil:
		return string(v.BinaryValue), true
	}
	return "", false
}

func (r *Replayer) item(ctx context.Context, m types.Message) Item {
	attr := func(name string) string {
		v, _ := attrText(m.MessageAttributes, name)
		return v
	}
	it := Item{
		MessageID:         aws.ToString(m.MessageId),
		GroupID:           attr(worker.AttrGroupID),
		Reason:            attr(worker.AttrReason),
		Attempts:          attr(worker.AttrAttempts),
		OriginalMessageID: attr(worker.AttrMessageID),
		FailedAt:          attr(worker.AttrFailedAt),
		EventKey:          attr(worker.AttrEventKey),
		Stream:            attr(queue.AttrStream),
	}
	if s, err := queue.ParseStream(it.Stream); it.Stream != "" && err == nil {
		it.Destination = s.Destination
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
	body, note := r.body(ctx, m)
	it.Note = note
	if env, err := envelope.Decode(body); err == nil {
		it.EventKey, it.EventID, it.Type, it.Conversation = env.Key, env.EventID, env.Type, env.Conversation
	}
	return it
}

// body returns m's envelope: its body, or the object of the payload
// bucket it points to (nil, with a note saying why, when that cannot be
// read).
func (r *Replayer) body(ctx context.Context, m types.Message) ([]byte, string) {
	body := aws.ToString(m.Body)
	if !queue.IsPointer(body) {
		return []byte(body), ""
	}
	if r.opts.Payloads == nil {
		return nil, "body in the payload bucket (give the bucket to see its type)"
	}
	b, err := r.opts.Payloads.Get(ctx, body)
	if err != nil {
		return nil, "body in the payload bucket: " + err.Error()
	}
	return b, ""
}

// ErrNotListed: the DLQ listing did not see the message.
var ErrNotListed = errors.New("no such dead letter")

// Envelope returns the envelope of the DLQ message messageID (read from
// the payload bucket when it was offloaded there), receiving as List does:
// every message is visible again when it returns. Unlike List, it holds
// the event's body and headers: a caller shows them only when asked. It
// returns an error wrapping ErrNotListed when the listing does not see
// the message, envelope.ErrInvalid or a note's reason when its envelope
// cannot be read, or a wrapped AWS error.
func (r *Replayer) Envelope(ctx context.Context, dlqURL, messageID string) (*envelope.Envelope, error) {
	var body []byte
	var note string
	found := false
	_, err := r.run(ctx, dlqURL, func(ctx context.Context, it *Item, m types.Message) bool {
		if it.MessageID == messageID {
			found = true
			body, note = r.body(ctx, m)
		}
		return false
	})
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, fmt.Errorf("%w %s in %s (moved, deleted by its retention, or hidden by another listing or redrive)", ErrNotListed, messageID, dlqURL)
	case body == nil:
		return nil, fmt.Errorf("dead letter %s: %s", messageID, note)
	}
	return envelope.Decode(body)
}
