package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/worker"
)

// This file holds the simulation's twins: an SQS FIFO queue pair with AWS's
// documented semantics, and the invocation session through which every AWS
// call of one worker invocation passes, so a crash can fall between any two.

// errCrashed is what every call of a crashed invocation gets.
var errCrashed = errors.New("simulated crash: the invocation is gone")

// session is one worker invocation's view of AWS. After crashAfter calls
// (negative: never) the process is gone: that call and every later one
// fail without effect, and the invocation's answer is discarded.
type session struct {
	calls, crashAfter int
	crashed           bool
	// loseAt, when > 0, is the call whose answer is lost: it lands, and
	// its caller gets an error (a timeout on the response).
	loseAt int
	// deadline is the invocation's (zero: none, a local poller), and
	// cancel ends its context (the cut-off of a straggler).
	deadline time.Time
	cancel   context.CancelFunc
	// timeUpAt, when > 0, is the call at which the invocation's time runs
	// out (world.timeUp); recreateAt the call before which the operator
	// deletes the source queue and creates it again (world.recreateUnder).
	timeUpAt, recreateAt int
	// failedCall: a call failed at timeUpAt.
	failedCall bool
	// jumped: the clock moved under the invocation after the worker may
	// have decided on a message (world.timeUp, world.recreateUnder): a
	// visibility it then set counts from a later instant than its decision.
	jumped bool
	// hidden are the visibilities the worker set on the source queue's
	// messages (world.changeVisibility): until when, and for how long.
	hidden map[*simMsg]hiding
	// straggled are the messages whose effect the cut-off left running.
	straggled []*simMsg
	// before runs what the world does before call n lands, and reports
	// whether the call fails (its context ended).
	before func(n int) bool
}

// hiding is a visibility timeout the worker set on a message: it is
// visible again at until, after d.
type hiding struct {
	until time.Time
	d     time.Duration
}

// errLost is the answer of a call whose response was lost.
var errLost = errors.New("simulated lost response: the call landed, its answer did not")

// lost reports whether the answer of the call just made is lost.
func (s *session) lost() bool { return s != nil && s.loseAt > 0 && s.calls == s.loseAt }

// hide notes the visibility the worker set on m.
func (s *session) hide(m *simMsg, h hiding) {
	if s.hidden == nil {
		s.hidden = map[*simMsg]hiding{}
	}
	s.hidden[m] = h
}

// clean reports whether the invocation ended with every AWS call it made
// landed and answered: not crashed, no answer lost.
func (s *session) clean() bool {
	return !s.crashed && (s.loseAt == 0 || s.calls < s.loseAt)
}

// call reports whether the next AWS call lands.
func (s *session) call() bool {
	if s == nil {
		return true
	}
	if s.crashed || s.crashAfter >= 0 && s.calls >= s.crashAfter {
		s.crashed = true
		return false
	}
	s.calls++
	return s.before == nil || !s.before(s.calls)
}

// provenance says who put a message on the source queue.
type provenance string

const (
	byIngest provenance = "ingest"
	byReplay provenance = "scripts/replay"
	byMove   provenance = "move-task"
	byHand   provenance = "hand re-send"
	// byHandSize keeps the pointer's size attribute, byHandEvent the
	// event's attributes (eventAttrs).
	byHandSize  provenance = "hand re-send with its size"
	byHandEvent provenance = "hand re-send with its event's attributes"
)

// eventAttrs are the attributes that name a message's event outside its
// body, and eventKeyAttr the one that carries its key: scripts/replay
// keeps them with the body.
var (
	eventAttrs   = []string{queue.SizeAttribute, queue.AttrTenant, queue.AttrEventKey, queue.AttrConversation, queue.AttrReceivedAt}
	eventKeyAttr = queue.AttrEventKey
)

// ingestAttrs are the attributes ingest sends with env's message.
func ingestAttrs(env *envelope.Envelope) map[string]string {
	return queue.EnvelopeIdentity(env).Attributes()
}

// simMsg is one SQS message.
type simMsg struct {
	id, body, group, dedup string
	attrs                  map[string]string
	seq                    uint64
	sent                   time.Time
	receives               int
	visibleAt              time.Time
	receipt                string
	event                  *simEvent
	from                   provenance
	// reasonless: SQS itself moved it to the DLQ (maxReceiveCount).
	reasonless bool
	// claimed: a claim of one of its event's records landed for it.
	claimed bool
	// paced counts the receives it waited for a rate (outcome paced), and
	// hole is set once world.pacedPast or world.crashedPast logged it.
	paced int
	hole  bool
	// crashedPast counts its receives that ended in a faulted invocation
	// once its receives had reached 10 × MaxAttempts (world.crashedPast).
	crashedPast int
	// attempts are its receives whose failed attempt the ledger counted
	// in that receive, or must have (world.checkCutOff).
	attempts map[int]bool
}

// count notes that receive of m was a failed attempt, counted.
func (m *simMsg) count(receive int) {
	if m.attempts == nil {
		m.attempts = map[int]bool{}
	}
	m.attempts[receive] = true
}

// fifo is an SQS FIFO queue: message groups handed out one in-flight group
// at a time in order, visibility timeouts, receive counts, a redrive policy
// (maxReceiveCount, to dlq), retention, and the five-minute deduplication.
type fifo struct {
	name       string
	created    time.Time
	seq        uint64
	msgs       []*simMsg
	dedup      map[string]time.Time
	dlq        *fifo
	maxRecv    int
	retention  time.Duration
	visibility time.Duration
	nextID     *int
	// expired collects messages SQS deleted at the end of their retention.
	expired []*simMsg
}

// visibilityTimeout is the source queue's: longer than the worker's lease
// (an invocation's deadline).
const visibilityTimeout = 6 * time.Minute

func newFIFO(name string, now time.Time, ids *int) *fifo {
	return &fifo{name: name, created: now, seq: 1000, dedup: map[string]time.Time{}, retention: 14 * 24 * time.Hour, visibility: visibilityTimeout, nextID: ids}
}

func (q *fifo) url() string {
	return "https://sqs.us-east-1.amazonaws.com/123456789012/" + q.name + ".fifo"
}
func (q *fifo) arn() string { return "arn:aws:sqs:us-east-1:123456789012:" + q.name + ".fifo" }

// send enqueues m unless its deduplication id was sent in the last five
// minutes (then SQS answers success and drops it).
func (q *fifo) send(now time.Time, m *simMsg) (*simMsg, bool) {
	if at, ok := q.dedup[m.dedup]; ok && now.Sub(at) < 5*time.Minute {
		return nil, false
	}
	q.dedup[m.dedup] = now
	*q.nextID++
	q.seq++
	m.id, m.seq, m.sent, m.visibleAt, m.receives = fmt.Sprintf("m%d", *q.nextID), q.seq, now, now, 0
	q.msgs = append(q.msgs, m)
	return m, true
}

// expire deletes messages past their retention.
func (q *fifo) expire(now time.Time) {
	kept := q.msgs[:0]
	for _, m := range q.msgs {
		if !now.Before(m.sent.Add(q.retention)) {
			q.expired = append(q.expired, m)
			continue
		}
		kept = append(kept, m)
	}
	q.msgs = kept
}

// receive returns up to n visible messages of one message group (the
// oldest group with nothing in flight), in order, as SQS FIFO may. A
// message received maxReceiveCount times already moves to the DLQ instead,
// keeping its id; the DLQ's retention counts from the move (FIFO).
func (q *fifo) receive(now time.Time, n int) []*simMsg {
	return q.receiveFor(now, n, q.visibility)
}

// receiveFor is receive hiding what it returns for vis (a ReceiveMessage
// call's VisibilityTimeout).
func (q *fifo) receiveFor(now time.Time, n int, vis time.Duration) []*simMsg {
	q.expire(now)
	inflight := map[string]bool{}
	for _, m := range q.msgs {
		if now.Before(m.visibleAt) {
			inflight[m.group] = true
		}
	}
	var out []*simMsg
	group := ""
	for i := 0; i < len(q.msgs) && len(out) < n; i++ {
		m := q.msgs[i]
		if inflight[m.group] || group != "" && m.group != group {
			continue
		}
		if q.maxRecv > 0 && m.receives >= q.maxRecv && q.dlq != nil {
			q.remove(m)
			i--
			m.reasonless = true
			m.sent, m.visibleAt = now, now
			q.dlq.msgs = append(q.dlq.msgs, m)
			continue
		}
		group = m.group
		m.receives++
		m.receipt = fmt.Sprintf("%s-r%d", m.id, m.receives)
		m.visibleAt = now.Add(vis)
		out = append(out, m)
	}
	return out
}

func (q *fifo) remove(m *simMsg) {
	for i, x := range q.msgs {
		if x == m {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			return
		}
	}
}

// byReceipt finds the message a receipt handle names; only the latest
// receipt of a message still in flight counts.
func (q *fifo) byReceipt(now time.Time, receipt string) *simMsg {
	for _, m := range q.msgs {
		if m.receipt == receipt && now.Before(m.visibleAt) {
			return m
		}
	}
	return nil
}

// visible reports whether any message could be received now.
func (q *fifo) visible(now time.Time) bool {
	for _, m := range q.msgs {
		if !now.Before(m.visibleAt) && now.Before(m.sent.Add(q.retention)) {
			return true
		}
	}
	return false
}

// nextChange is the earliest instant after now at which a message becomes
// visible or expires.
func (q *fifo) nextChange(now time.Time) (time.Time, bool) {
	var ts []time.Time
	for _, m := range q.msgs {
		if m.visibleAt.After(now) {
			ts = append(ts, m.visibleAt)
		}
		if end := m.sent.Add(q.retention); end.After(now) {
			ts = append(ts, end)
		}
	}
	if len(ts) == 0 {
		return time.Time{}, false
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	return ts[0], true
}

// record renders m as the event source mapping hands it to the worker.
func (q *fifo) record(m *simMsg) events.SQSMessage {
	attrs := map[string]events.SQSMessageAttribute{}
	for k, v := range m.attrs {
		attrs[k] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(v)}
	}
	return events.SQSMessage{
		MessageId: m.id, ReceiptHandle: m.receipt, Body: m.body, EventSourceARN: q.arn(),
		MessageAttributes: attrs,
		Attributes: map[string]string{
			"ApproximateReceiveCount": strconv.Itoa(m.receives),
			"SentTimestamp":           strconv.FormatInt(m.sent.UnixMilli(), 10),
			"SequenceNumber":          strconv.FormatUint(m.seq, 10),
			"MessageGroupId":          m.group,
			"MessageDeduplicationId":  m.dedup,
		},
	}
}

// simSQS is the worker's SQS client (the DLQ send, the visibility change
// and the queue attributes); each call passes through the current
// invocation's session (world.sess).
type simSQS struct{ w *world }

func (c simSQS) Send(ctx context.Context, url string, m queue.Message) (string, error) {
	if c.w.expired(ctx) {
		return "", errExpired
	}
	if !c.w.sess.call() {
		return "", errCrashed
	}
	q := c.w.queueByURL(url)
	if q == nil {
		return "", fmt.Errorf("AWS.SimpleQueueService.NonExistentQueue: %s", url)
	}
	msg := &simMsg{body: string(m.Body), group: m.GroupID, dedup: m.DeduplicationID, attrs: m.Attributes, from: byIngest}
	msg.event = c.w.eventOfBody(msg.body)
	if sent, ok := q.send(c.w.now, msg); ok && q == c.w.src.dlq {
		c.w.deadLettered(sent)
	}
	if c.w.sess.lost() {
		return "", errLost
	}
	return "ok", nil
}

func (c simSQS) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if c.w.expired(ctx) {
		return nil, errExpired
	}
	if !c.w.sess.call() {
		return nil, errCrashed
	}
	return c.w.changeVisibility(in), nil
}

// changeVisibility is ChangeMessageVisibilityBatch on the queue in names:
// an entry whose receipt handle is not its message's latest one in flight
// fails.
func (w *world) changeVisibility(in *sqs.ChangeMessageVisibilityBatchInput) *sqs.ChangeMessageVisibilityBatchOutput {
	q := w.queueByURL(aws.ToString(in.QueueUrl))
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		m := (*simMsg)(nil)
		if q != nil {
			m = q.byReceipt(w.now, aws.ToString(e.ReceiptHandle))
		}
		if m == nil {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid")})
			continue
		}
		d := time.Duration(e.VisibilityTimeout) * time.Second
		m.visibleAt = w.now.Add(d)
		if w.sess != nil && q == w.src {
			w.sess.hide(m, hiding{until: m.visibleAt, d: d})
		}
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out
}

func (c simSQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	if c.w.expired(ctx) {
		return nil, errExpired
	}
	if !c.w.sess.call() {
		return nil, errCrashed
	}
	url := aws.ToString(in.QueueUrl)
	if c.w.srcGone && url == c.w.src.url() && c.w.now.Before(c.w.staleUntil) {
		// Deleted a moment ago: a read may still answer.
		return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"CreatedTimestamp": strconv.FormatInt(c.w.src.created.Unix(), 10)}}, nil
	}
	q := c.w.queueByURL(url)
	if q == nil {
		return nil, fmt.Errorf("AWS.SimpleQueueService.NonExistentQueue")
	}
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"CreatedTimestamp": strconv.FormatInt(q.created.Unix(), 10)}}, nil
}

// simLedger passes the worker's ledger calls through the current
// invocation's session (world.sess) to the in-memory ledger (DynamoDB's
// semantics), and tells the world which claims and completions landed. A
// call the world's mode throttles (ledger/FailedAttempt, ledger/Complete)
// fails without landing, as DynamoDB's ProvisionedThroughputExceeded
// does once the SDK's retries are spent.
type simLedger struct{ w *world }

// errThrottled is the answer to a throttled ledger call.
var errThrottled = errors.New("simulated ProvisionedThroughputExceededException: the call did not land")

// throttled reports whether the world's mode fails ledger call name.
func (l simLedger) throttled(name string) bool {
	return l.w.mode["ledger/"+name] == "throttled"
}

func (l simLedger) Claim(ctx context.Context, f ledger.Fence, k ledger.Key, d time.Duration) (ledger.Lease, error) {
	if l.w.expired(ctx) {
		return ledger.Lease{}, errExpired
	}
	if !l.w.sess.call() {
		return ledger.Lease{}, errCrashed
	}
	if l.w.mode["ledger/Claim"] == "lost answers" {
		l.w.ledger.LoseAnswers(1)
	}
	ls, err := l.w.ledger.Claim(ctx, f, k, d)
	l.w.claimed(f, k, err)
	if l.w.sess.lost() {
		return ledger.Lease{}, errLost
	}
	return ls, err
}

func (l simLedger) Complete(ctx context.Context, ls ledger.Lease) error {
	if l.w.expired(ctx) {
		return errExpired
	}
	if !l.w.sess.call() {
		return errCrashed
	}
	if l.throttled("Complete") {
		return errThrottled
	}
	err := l.w.ledger.Complete(ctx, ls)
	if err == nil {
		l.w.durable(ls.Key.Event, ls.Key.Effect, "its completion was written")
	}
	if l.w.sess.lost() {
		return errLost
	}
	return err
}

func (l simLedger) Fail(ctx context.Context, ls ledger.Lease, reason string) error {
	if l.w.expired(ctx) {
		return errExpired
	}
	if !l.w.sess.call() {
		return errCrashed
	}
	err := l.w.ledger.Fail(ctx, ls, reason)
	if l.w.sess.lost() {
		return errLost
	}
	return err
}

func (l simLedger) Bury(ctx context.Context, f ledger.Fence, keys []ledger.Key, own []ledger.Lease, reason string) error {
	if l.w.expired(ctx) {
		return errExpired
	}
	if !l.w.sess.call() {
		return errCrashed
	}
	err := l.w.ledger.Bury(ctx, f, keys, own, reason)
	if l.w.sess.lost() {
		return errLost
	}
	return err
}

func (l simLedger) Buried(ctx context.Context, f ledger.Fence, keys []ledger.Key) error {
	if l.w.expired(ctx) {
		return errExpired
	}
	if !l.w.sess.call() {
		return errCrashed
	}
	err := l.w.ledger.Buried(ctx, f, keys)
	if l.w.sess.lost() {
		return errLost
	}
	return err
}

func (l simLedger) Apply(ctx context.Context, f ledger.Fence, u ledger.Update) error {
	if l.w.expired(ctx) {
		return errExpired
	}
	if !l.w.sess.call() {
		return errCrashed
	}
	return l.w.ledger.Apply(ctx, f, u)
}

func (l simLedger) FailedAttempt(ctx context.Context, id string, receive int) (int, error) {
	if l.w.expired(ctx) {
		return 0, errExpired
	}
	if !l.w.sess.call() {
		return 0, errCrashed
	}
	if l.throttled("FailedAttempt") {
		return 0, errThrottled
	}
	if m := l.w.batch[id]; m != nil && m.receives == receive {
		// The count of this receive's attempt; one of an earlier receive
		// is an effect it left interrupted (Event's rule).
		l.w.attempted[id] = true
	}
	n, err := l.w.ledger.FailedAttempt(ctx, id, receive)
	if m := l.w.batch[id]; m != nil && m.receives == receive && err == nil {
		m.count(receive)
	}
	if l.w.sess.lost() {
		return 0, errLost
	}
	if m := l.w.batch[id]; m != nil && err == nil && n >= maxAttempts {
		l.w.learned[id] = m.receives // the worker knows its limit is reached
	}
	return n, err
}

// simRedrive is the AWS of one run of scripts/replay's redrive (the real
// replay.Replayer): its receives, deletions and visibility changes on the
// DLQ twin and its sends to the source queue, each through the run's own
// session (the tool crashing, or an answer lost), with the world's actions
// interleaved before each receive after the first and before each
// deletion (between). It checks the redrive's promises as the calls land:
// only messages dead-lettered before the run started are moved, each DLQ
// message and each event at most once.
type simRedrive struct {
	w    *world
	sess *session
	// start is the run's start; before counts the DLQ's messages
	// dead-lettered before it.
	start    time.Time
	before   int
	receives int
	// payloads: the tool reads offloaded bodies (its -bucket flag).
	payloads bool
	// moved maps each DLQ message whose send landed to its copy, and
	// events each event and stream moved to the DLQ message it was moved
	// for (each destination's dead letter of an event is its own).
	moved   map[string]*simMsg
	events  map[streamOfEvent]string
	between func(where string)
}

// redriveReceives bounds a run's receives in the twin: past it receives
// fail, so a run that would not end cannot hang the simulation (world.redrive
// reports it).
const redriveReceives = 500

// errRunaway is the twin's answer to a receive past redriveReceives.
var errRunaway = errors.New("simulated receive refused: the redrive does not end")

func (r *simRedrive) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if r.receives > 0 {
		r.between("receive")
	}
	if r.receives++; r.receives > redriveReceives {
		return nil, errRunaway
	}
	if !r.sess.call() {
		return nil, errCrashed
	}
	q := r.w.queueByURL(aws.ToString(in.QueueUrl))
	if q == nil {
		return nil, fmt.Errorf("AWS.SimpleQueueService.NonExistentQueue: %s", aws.ToString(in.QueueUrl))
	}
	vis := time.Duration(in.VisibilityTimeout) * time.Second
	msgs := q.receiveFor(r.w.now, int(in.MaxNumberOfMessages), vis)
	if wait := time.Duration(in.WaitTimeSeconds) * time.Second; len(msgs) == 0 && wait > 0 {
		// A long poll: the worker runs meanwhile.
		r.w.advance(wait)
		msgs = q.receiveFor(r.w.now, int(in.MaxNumberOfMessages), vis)
	}
	if r.sess.lost() {
		return nil, errLost // received (hidden for vis), never seen by the tool
	}
	out := &sqs.ReceiveMessageOutput{}
	for _, m := range msgs {
		attrs := map[string]types.MessageAttributeValue{}
		for k, v := range m.attrs {
			attrs[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
		out.Messages = append(out.Messages, types.Message{
			MessageId: aws.String(m.id), ReceiptHandle: aws.String(m.receipt), Body: aws.String(m.body),
			Attributes: map[string]string{
				string(types.MessageSystemAttributeNameSentTimestamp):  strconv.FormatInt(m.sent.UnixMilli(), 10),
				string(types.MessageSystemAttributeNameMessageGroupId): m.group,
			},
			MessageAttributes: attrs,
		})
	}
	return out, nil
}

func (r *simRedrive) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	r.between("delete")
	if !r.sess.call() {
		return nil, errCrashed
	}
	q := r.w.queueByURL(aws.ToString(in.QueueUrl))
	m := (*simMsg)(nil)
	if q != nil {
		m = q.byReceipt(r.w.now, aws.ToString(in.ReceiptHandle))
	}
	if m == nil {
		return nil, &types.ReceiptHandleIsInvalid{Message: aws.String("stale receipt handle " + aws.ToString(in.ReceiptHandle))}
	}
	q.remove(m)
	if r.sess.lost() {
		return nil, errLost
	}
	return &sqs.DeleteMessageOutput{}, nil
}

func (r *simRedrive) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if !r.sess.call() {
		return nil, errCrashed
	}
	out := r.w.changeVisibility(in)
	if r.sess.lost() {
		return nil, errLost
	}
	return out, nil
}

// Send is the tool's send to the source queue (queue.SQS). A copy that
// lands is checked against the run's promises.
func (r *simRedrive) Send(_ context.Context, url string, m queue.Message) (string, error) {
	if !r.sess.call() {
		return "", errCrashed
	}
	q := r.w.queueByURL(url)
	if q == nil {
		return "", fmt.Errorf("AWS.SimpleQueueService.NonExistentQueue: %s", url)
	}
	of := m.Attributes[replay.AttrReplayOf]
	dl := r.w.dlqMessage(of)
	msg := &simMsg{body: string(m.Body), group: m.GroupID, dedup: m.DeduplicationID, attrs: m.Attributes, from: byReplay}
	msg.event = r.w.eventOfBody(msg.body)
	sent, ok := r.w.sendBack(q, msg, of)
	if ok {
		r.landed(dl, of, sent)
	}
	if r.sess.lost() {
		return "", errLost
	}
	return sent.id, nil
}

// landed checks a copy of DLQ message of that SQS accepted.
func (r *simRedrive) landed(dl *simMsg, of string, sent *simMsg) {
	w := r.w
	switch {
	case dl == nil:
		w.violate("the redrive moved %s, which is no message of the DLQ", of)
		return
	case !dl.sent.Before(r.start):
		w.violate("the redrive moved %s, dead-lettered at %s, after the run started (%s)", of, dl.sent.Format(time.RFC3339Nano), r.start.Format(time.RFC3339Nano))
	case r.moved[of] != nil:
		w.violate("the redrive moved %s twice in one run (as %s and %s)", of, r.moved[of].id, sent.id)
	}
	r.moved[of] = sent
	e := sent.event
	if e == nil {
		return
	}
	// The tool knows a message's event by its body (when it can read it)
	// or by the dead letter's hookpack.eventKey; one it cannot name may
	// be any event's.
	if named := dl.attrs[worker.AttrEventKey] != "" || w.readable(dl.body) == "" && (!queue.IsPointer(dl.body) || r.payloads); !named {
		return
	}
	k := streamOfEvent{e, dl.attrs[queue.AttrStream]}
	if first, ok := r.events[k]; ok {
		w.violate("the redrive moved %s twice in one run (from %s and %s)", e.id, first, of)
	}
	r.events[k] = of
}

// streamOfEvent is an event's stream (its hookpack.stream attribute).
type streamOfEvent struct {
	e      *simEvent
	stream string
}

// dlqMessage is the DLQ's message id, or nil.
func (w *world) dlqMessage(id string) *simMsg {
	for _, m := range w.src.dlq.msgs {
		if m.id == id {
			return m
		}
	}
	return nil
}
