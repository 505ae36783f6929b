// Package queue sends envelopes to a tenant's FIFO SQS queue.
//
// Every send carries a MessageGroupId (the conversation, or a destination's
// stream of it, stream.go: SQS delivers one group strictly in order, groups
// in parallel) and a MessageDeduplicationId
// (from the idempotency key: a resend within SQS's 5-minute window is
// dropped by SQS itself, a second line of defence behind the claim).
package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// MaxMessageBytes is SQS's size limit of one message (body plus
// attributes), 1 MiB; the queues' MaximumMessageSize in template.yaml is
// set to it.
const MaxMessageBytes = 1024 * 1024

// MaxEventBytes is the largest event message ingest queues, its identity
// attributes counted (Message.Size): MaxMessageBytes less room for the
// attributes the worker adds when it dead-letters the message (reason,
// attempts, group, ids, time), so every queued event can also be
// dead-lettered.
const MaxEventBytes = MaxMessageBytes - 2048

// ErrTooLarge is returned for messages over the configured limit.
var ErrTooLarge = errors.New("message too large")

// Message is one FIFO message.
type Message struct {
	GroupID         string
	DeduplicationID string
	Body            []byte
	// Attributes are string message attributes (an event's Identity, the
	// failure reason on a dead-lettered message).
	Attributes map[string]string
}

// Size is the message's size as SQS counts it: body plus attribute names,
// types and values.
func (m Message) Size() int {
	n := len(m.Body)
	for k, v := range m.Attributes {
		n += len(k) + len("String") + len(v)
	}
	return n
}

type sqsAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// Batch limits of SendMessageBatch: entries per call, and the sum of the
// entries' sizes.
const (
	MaxBatchEntries = 10
	MaxBatchBytes   = 1024 * 1024
)

// ErrEntryRejected wraps a SendMessageBatch entry that SQS refused as the
// sender's fault (an invalid message): sending it again cannot succeed.
var ErrEntryRejected = errors.New("message rejected by SQS")

// SQS sends messages with the SQS API.
type SQS struct {
	client sqsAPI
	// Offload, when set, takes the bodies over MaxEventBytes that
	// SendBatch sends (see Payloads); without it they fail with
	// ErrTooLarge.
	Offload *Payloads
}

// NewSQS returns a sender.
func NewSQS(client sqsAPI) *SQS { return &SQS{client: client} }

// Send puts m on the FIFO queue at url and returns the SQS message id. It
// returns ErrTooLarge without calling SQS for an oversized message, or a
// wrapped AWS error.
func (q *SQS) Send(ctx context.Context, url string, m Message) (string, error) {
	if m.Size() > MaxMessageBytes {
		return "", fmt.Errorf("send to %s: %d bytes: %w", queueName(url), m.Size(), ErrTooLarge)
	}
	out, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:               aws.String(url),
		MessageBody:            aws.String(string(m.Body)),
		MessageGroupId:         aws.String(m.GroupID),
		MessageDeduplicationId: aws.String(m.DeduplicationID),
		MessageAttributes:      attributes(m.Attributes),
	})
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", queueName(url), err)
	}
	return aws.ToString(out.MessageId), nil
}

// ErrNotSent wraps a message SendBatch held back because an earlier message
// of its group was not queued: sent, it would have overtaken that one. The
// error wraps that message's error too, so it is as retryable as that one
// (errors.Is(err, ErrTooLarge) holds behind an oversized message).
var ErrNotSent = errors.New("not sent: an earlier message of its group is not queued")

// SendBatch puts msgs on the FIFO queue at url with SendMessageBatch and
// returns one error per message, nil for each one SQS durably queued.
//
// Each group keeps its order even when SQS fails some entries: a call
// carries at most one message per group (as many groups as the limits
// allow: MaxBatchEntries entries, MaxBatchBytes), and a group's next
// message goes out only after the one before it is queued; after a
// failure, the group's later messages are not sent (ErrNotSent). A batch
// of distinct conversations takes one call per ten; one conversation's
// messages one call each.
//
// A body over MaxEventBytes goes to S3 when Offload is set (the message
// carries a pointer, see Payloads), or fails with ErrTooLarge without
// calling SQS. Other errors: one wrapping ErrEntryRejected for an entry SQS
// refused as invalid, or the wrapped AWS error of an entry SQS failed on
// its side or of a call that failed as a whole (for those, sending the
// message again may succeed; its deduplication id makes a repeat harmless).
func (q *SQS) SendBatch(ctx context.Context, url string, msgs []Message) []error {
	errs := make([]error, len(msgs))
	pending := map[string][]int{} // group → its messages not yet sent, in order
	var groups []string
	for i, m := range msgs {
		if _, ok := pending[m.GroupID]; !ok {
			groups = append(groups, m.GroupID)
		}
		pending[m.GroupID] = append(pending[m.GroupID], i)
	}
	for {
		var wave []int // the first unsent message of each group
		for _, g := range groups {
			if idx := pending[g]; len(idx) > 0 {
				wave, pending[g] = append(wave, idx[0]), idx[1:]
			}
		}
		if len(wave) == 0 {
			return errs
		}
		q.sendWave(ctx, url, msgs, wave, errs)
		for _, i := range wave {
			if errs[i] != nil {
				g := msgs[i].GroupID
				for _, k := range pending[g] {
					errs[k] = fmt.Errorf("%w: %w", ErrNotSent, errs[i])
				}
				pending[g] = nil
			}
		}
	}
}

// sendWave sends msgs[wave], offloading large bodies first, in as few
// calls as the batch limits allow, recording each outcome in errs.
func (q *SQS) sendWave(ctx context.Context, url string, msgs []Message, wave []int, errs []error) {
	var batch []int
	var out []Message
	size := 0
	flush := func() {
		if len(batch) > 0 {
			q.sendBatch(ctx, url, out, batch, errs)
		}
		batch, out, size = batch[:0], out[:0], 0
	}
	for _, i := range wave {
		m, err := q.fit(ctx, url, msgs[i])
		if err != nil {
			errs[i] = err
			continue
		}
		if len(batch) == MaxBatchEntries || size+m.Size() > MaxBatchBytes {
			flush()
		}
		batch, out = append(batch, i), append(out, m)
		size += m.Size()
	}
	flush()
}

// fit returns m as it can be sent: itself, or a pointer to its body in S3.
func (q *SQS) fit(ctx context.Context, url string, m Message) (Message, error) {
	limit := MaxMessageBytes
	if q.Offload != nil {
		limit = MaxOffloadBytes
	}
	switch {
	case m.Size() > limit:
		return m, fmt.Errorf("send to %s: %d bytes: %w", queueName(url), m.Size(), ErrTooLarge)
	case q.Offload != nil && m.Size() > MaxEventBytes:
		m, err := q.Offload.offload(ctx, queueName(url), m)
		if err != nil {
			return m, fmt.Errorf("send to %s: %w", queueName(url), err)
		}
		return m, nil
	}
	return m, nil
}

// sendBatch sends msgs (the messages of msgs' original indices idx) in one
// call and records each entry's outcome in errs; entry ids are the indices.
func (q *SQS) sendBatch(ctx context.Context, url string, msgs []Message, idx []int, errs []error) {
	entries := make([]types.SendMessageBatchRequestEntry, len(idx))
	for j, i := range idx {
		m := msgs[j]
		entries[j] = types.SendMessageBatchRequestEntry{
			Id:                     aws.String(strconv.Itoa(i)),
			MessageBody:            aws.String(string(m.Body)),
			MessageGroupId:         aws.String(m.GroupID),
			MessageDeduplicationId: aws.String(m.DeduplicationID),
			MessageAttributes:      attributes(m.Attributes),
		}
	}
	out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		for _, i := range idx {
			errs[i] = fmt.Errorf("send to %s: %w", queueName(url), err)
		}
		return
	}
	done := make(map[string]bool, len(out.Successful))
	for _, s := range out.Successful {
		done[aws.ToString(s.Id)] = true
	}
	failed := make(map[string]types.BatchResultErrorEntry, len(out.Failed))
	for _, f := range out.Failed {
		failed[aws.ToString(f.Id)] = f
	}
	for _, i := range idx {
		id := strconv.Itoa(i)
		f, isFailed := failed[id]
		switch {
		case isFailed && f.SenderFault:
			errs[i] = fmt.Errorf("send to %s: %s: %w", queueName(url), aws.ToString(f.Code), ErrEntryRejected)
		case isFailed:
			errs[i] = fmt.Errorf("send to %s: %s: %s", queueName(url), aws.ToString(f.Code), aws.ToString(f.Message))
		case !done[id]:
			// Neither listed: SQS's answer does not say it is queued.
			errs[i] = fmt.Errorf("send to %s: entry %s missing from the response", queueName(url), id)
		}
	}
}

// attributes returns attrs as SQS message attributes: Strings, but the
// Extended Client's size a Number as it writes it, and a value SQS would
// refuse as a String (text outside the characters it allows, e.g. an event
// key holding a control character) a Binary of the same bytes, which SQS
// counts the same and takes as it is. IdentityOf reads either.
func attributes(attrs map[string]string) map[string]types.MessageAttributeValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for k, v := range attrs {
		switch {
		case k == SizeAttribute:
			out[k] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(v)}
		case !sqsText(v):
			out[k] = types.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: []byte(v)}
		default:
			out[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
	}
	return out
}

// sqsText reports whether SQS takes s as a String value: valid UTF-8 of
// the characters #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD |
// #x10000 to #x10FFFF.
func sqsText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return false
		}
	}
	return true
}

// URL expands a queue URL template ("…/hookpack-{tenant}.fifo") for tenant.
func URL(template, tenant string) string {
	return strings.ReplaceAll(template, "{tenant}", tenant)
}

func queueName(url string) string {
	return url[strings.LastIndexByte(url, '/')+1:]
}
