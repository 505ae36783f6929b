package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/internal/attr"
	"github.com/hookpack/hookpack/pkg/internal/epoch"
)

// queueAPI reads a queue's depth, and its tags for a queue that holds
// messages. Both calls only read.
type queueAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ListQueueTags(ctx context.Context, in *sqs.ListQueueTagsInput, opts ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error)
}

// metricAPI reads the queues' ApproximateAgeOfOldestMessage.
type metricAPI interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// stateAPI keeps the breaches' State, one item per tenant and rule.
type stateAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// destinationStates reads a tenant's destinations' pauses (one eventually
// consistent GetItem of the ledger table: destination.DynamoDB).
type destinationStates interface {
	States(ctx context.Context, tenantID string) (destination.States, error)
}

// topicAPI publishes a notification.
type topicAPI interface {
	Publish(ctx context.Context, in *sns.PublishInput, opts ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// ThresholdTag is the tag of a tenant queue holding its OldestMessage
// threshold in seconds (template-tenant.yaml sets it from
// OldestMessageAlarmSeconds). It is read only for a queue that holds
// messages; a queue without it takes Settings.OldestMessage.
const ThresholdTag = "hookpack:oldest-message-alarm-seconds"

// statePrefix starts the id of every State item in the state table (the
// idempotency table): claims never start with "_".
const statePrefix = "_watch#"

// Settings configure a Watcher. Zero durations take the Default* values.
type Settings struct {
	// Stack is the core stack's name, which the notifications' commands use.
	Stack string
	// QueueURLTemplate is a tenant queue's URL with "{tenant}" for its id;
	// the DLQ's ends in "-dlq.fifo" instead of ".fifo".
	QueueURLTemplate string
	// StateTable holds the breaches' State (items "_watch#<tenant>#<rule>",
	// "…#<destination>" for DestinationPaused).
	StateTable string
	// LedgerTable holds the destinations' pauses (package destination);
	// empty: DestinationPaused is never judged.
	LedgerTable string
	// TopicARN is where notifications go.
	TopicARN                             string
	OldestMessage, DeadLetterExpiry, Gap time.Duration
	// Repeat per rule; a missing rule takes DefaultRepeat's.
	Repeat map[Rule]time.Duration
	// Concurrency bounds the tenants read at once (default 16).
	Concurrency int
	// StateRetention is how long a State outlives its last sighting
	// (DynamoDB TTL).
	StateRetention time.Duration
}

// Watcher runs the watch; see the package comment. Its methods are safe
// for concurrent use, but two runs at once could each notify the same new
// breach: the function runs with a reserved concurrency of 1.
type Watcher struct {
	tenants func(ctx context.Context) ([]string, error)
	queues  queueAPI
	metrics metricAPI
	state   stateAPI
	topic   topicAPI
	dests   destinationStates
	s       Settings
	now     func() time.Time
	logger  *slog.Logger
}

// New returns a Watcher listing tenants with tenants, reading paused
// destinations with d (nil: none is judged). now may be nil.
func New(tenants func(ctx context.Context) ([]string, error), q queueAPI, m metricAPI, st stateAPI, t topicAPI, d destinationStates, s Settings, now func() time.Time, logger *slog.Logger) *Watcher {
	if s.OldestMessage <= 0 {
		s.OldestMessage = DefaultOldestMessage
	}
	if s.DeadLetterExpiry <= 0 {
		s.DeadLetterExpiry = DefaultDeadLetterExpiry
	}
	if s.Gap <= 0 {
		s.Gap = DefaultGap
	}
	repeat := make(map[Rule]time.Duration, len(DefaultRepeat))
	for r, d := range DefaultRepeat {
		repeat[r] = d
		if v := s.Repeat[r]; v > 0 {
			repeat[r] = v
		}
	}
	s.Repeat = repeat
	if s.Concurrency <= 0 {
		s.Concurrency = 16
	}
	if s.StateRetention <= 0 {
		s.StateRetention = DefaultStateRetention
	}
	if now == nil {
		now = time.Now
	}
	return &Watcher{tenants: tenants, queues: q, metrics: m, state: st, topic: t, dests: d, s: s, now: now, logger: logger}
}

// Notice is a breach a run found and what it did about it.
type Notice struct {
	Breach
	Since    time.Time
	Notified bool
}

// Report is what one run found.
type Report struct {
	Tenants int
	Notices []Notice
	// Failed maps a tenant to the error that kept the run from judging or
	// notifying it; the next run tries again.
	Failed map[string]error
}

// Run looks at every tenant once. It returns an error only when the tenant
// list cannot be read; a tenant the run could not read or notify is in the
// Report's Failed.
func (w *Watcher) Run(ctx context.Context) (Report, error) {
	ids, err := w.tenants(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("list tenants: %w", err)
	}
	now := w.now()
	rep := Report{Tenants: len(ids), Failed: map[string]error{}}
	obs := make([]Observation, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, w.s.Concurrency)
	var wg sync.WaitGroup
	for i, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			obs[i], errs[i] = w.observe(ctx, id)
		})
	}
	wg.Wait()
	if err := w.ages(ctx, now, obs); err != nil {
		// Without ages only the dead-letter count can be judged; every
		// tenant that needed an age is reported failed, none is skipped.
		for _, o := range obs {
			if o.Messages > 0 || o.DeadLetters > 0 {
				rep.Failed[o.Tenant] = err
			}
		}
	}
	for i, o := range obs {
		if errs[i] != nil {
			rep.Failed[ids[i]] = errs[i]
			continue
		}
		for _, b := range Breaches(o, w.s.DeadLetterExpiry, now) {
			n, err := w.notice(ctx, now, b)
			if err != nil {
				rep.Failed[b.Tenant] = errors.Join(rep.Failed[b.Tenant], err)
			}
			rep.Notices = append(rep.Notices, n)
		}
	}
	return rep, nil
}

var depthAttributes = []sqstypes.QueueAttributeName{
	sqstypes.QueueAttributeNameApproximateNumberOfMessages,
	sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
}

// observe reads the tenant's queue and DLQ depths, and the queue's
// threshold and the tenant's paused destinations when it holds messages.
func (w *Watcher) observe(ctx context.Context, tenant string) (Observation, error) {
	o := Observation{Tenant: tenant, OldestMessageThreshold: w.s.OldestMessage}
	var err error
	if o.Messages, err = w.depth(ctx, w.queueURL(tenant)); err != nil {
		return o, err
	}
	if o.DeadLetters, err = w.depth(ctx, w.deadLetterURL(tenant)); err != nil {
		return o, err
	}
	if o.Messages == 0 {
		return o, nil
	}
	tags, err := w.queues.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(w.queueURL(tenant))})
	if err != nil {
		return o, fmt.Errorf("tags of %s: %w", w.queueURL(tenant), err)
	}
	if v, ok := tags.Tags[ThresholdTag]; ok {
		s, err := strconv.Atoi(v)
		if err != nil || s <= 0 {
			return o, fmt.Errorf("tag %s of %s: want seconds, got %q", ThresholdTag, w.queueURL(tenant), v)
		}
		o.OldestMessageThreshold = time.Duration(s) * time.Second
	}
	if w.dests == nil {
		return o, nil
	}
	states, err := w.dests.States(ctx, tenant)
	if err != nil {
		return o, err
	}
	for name, s := range states {
		if s.IsPaused() {
			if o.Paused == nil {
				o.Paused = map[string]destination.Pause{}
			}
			o.Paused[name] = s.Paused
		}
	}
	return o, nil
}

func (w *Watcher) depth(ctx context.Context, url string) (int, error) {
	out, err := w.queues.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: depthAttributes})
	if err != nil {
		return 0, fmt.Errorf("depth of %s: %w", url, err)
	}
	n := 0
	for _, a := range depthAttributes {
		v, _ := strconv.Atoi(out.Attributes[string(a)])
		n += v
	}
	return n, nil
}

func (w *Watcher) queueURL(tenant string) string {
	return strings.ReplaceAll(w.s.QueueURLTemplate, "{tenant}", tenant)
}

func (w *Watcher) deadLetterURL(tenant string) string {
	return strings.TrimSuffix(w.queueURL(tenant), ".fifo") + "-dlq.fifo"
}

func queueName(url string) string { return url[strings.LastIndexByte(url, '/')+1:] }

// maxQueries is GetMetricData's limit of metrics per request.
const maxQueries = 500

// ages fills in the oldest-message ages of the queues that hold messages:
// one metric per such queue, none for an empty one (CloudWatch bills
// GetMetricData per metric requested).
func (w *Watcher) ages(ctx context.Context, now time.Time, obs []Observation) error {
	type target struct {
		i   int
		dlq bool
	}
	var queries []cwtypes.MetricDataQuery
	targets := map[string]target{}
	add := func(i int, dlq bool, url string) {
		id := fmt.Sprintf("q%d", len(queries))
		targets[id] = target{i, dlq}
		queries = append(queries, cwtypes.MetricDataQuery{Id: aws.String(id), MetricStat: &cwtypes.MetricStat{
			Metric: &cwtypes.Metric{Namespace: aws.String("AWS/SQS"), MetricName: aws.String("ApproximateAgeOfOldestMessage"),
				Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(queueName(url))}}},
			Period: aws.Int32(300), Stat: aws.String("Maximum")}})
	}
	for i, o := range obs {
		if o.Messages > 0 {
			add(i, false, w.queueURL(o.Tenant))
		}
		if o.DeadLetters > 0 {
			add(i, true, w.deadLetterURL(o.Tenant))
		}
	}
	for start := 0; start < len(queries); start += maxQueries {
		in := &cloudwatch.GetMetricDataInput{MetricDataQueries: queries[start:min(start+maxQueries, len(queries))],
			StartTime: aws.Time(now.Add(-15 * time.Minute)), EndTime: aws.Time(now), ScanBy: cwtypes.ScanByTimestampDescending}
		for {
			out, err := w.metrics.GetMetricData(ctx, in)
			if err != nil {
				return fmt.Errorf("oldest-message ages: %w", err)
			}
			for _, r := range out.MetricDataResults {
				t, ok := targets[aws.ToString(r.Id)]
				if !ok || len(r.Values) == 0 {
					continue
				}
				age := time.Duration(r.Values[latest(r.Timestamps)] * float64(time.Second))
				if t.dlq {
					obs[t.i].OldestDeadLetterAge, obs[t.i].KnownOldestDeadLetterAge = age, true
				} else {
					obs[t.i].OldestAge, obs[t.i].KnownOldestAge = age, true
				}
			}
			if out.NextToken == nil {
				break
			}
			in.NextToken = out.NextToken
		}
	}
	return nil
}

// latest is the index of the latest timestamp (the first one when
// CloudWatch returns them descending, as asked).
func latest(ts []time.Time) int {
	j := 0
	for i, t := range ts {
		if t.After(ts[j]) {
			j = i
		}
	}
	return j
}

// notice reads the breach's State, decides with Next, publishes when it
// says so and then writes the new State: a publish that fails leaves the
// State as it was, so the next run notifies again.
func (w *Watcher) notice(ctx context.Context, now time.Time, b Breach) (Notice, error) {
	n := Notice{Breach: b, Since: now}
	id := statePrefix + b.Tenant + "#" + string(b.Rule)
	if b.Destination != "" {
		id += "#" + b.Destination
	}
	key := map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: id}}
	got, err := w.state.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.s.StateTable), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return n, fmt.Errorf("state of %s %s: %w", b.Tenant, b.Rule, err)
	}
	st := State{Since: timeAttr(got.Item, "since"), Seen: timeAttr(got.Item, "seen"), Notified: timeAttr(got.Item, "notified")}
	next, notify := Next(st, now, w.s.Gap, w.s.Repeat[b.Rule])
	n.Since = next.Since
	if notify {
		if err := w.publish(ctx, b, next.Since); err != nil {
			return n, err
		}
		n.Notified = true
	}
	item := map[string]ddbtypes.AttributeValue{
		"id":         key["id"],
		"since":      attr.N(epoch.Seconds(next.Since)),
		"seen":       attr.N(epoch.Seconds(next.Seen)),
		"notified":   attr.N(epoch.Seconds(next.Notified)),
		"expiration": attr.N(epoch.Seconds(next.Seen.Add(w.s.StateRetention))),
	}
	if _, err := w.state.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(w.s.StateTable), Item: item}); err != nil {
		return n, fmt.Errorf("save state of %s %s: %w", b.Tenant, b.Rule, err)
	}
	return n, nil
}

func timeAttr(item map[string]ddbtypes.AttributeValue, name string) time.Time {
	n, ok := item[name].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return time.Time{}
	}
	s, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return epoch.FromSeconds(s)
}

// publish sends one notification naming the tenant, the rule, the numbers
// and the commands to run. Its attributes (tenant, rule) let a subscription
// filter by tenant.
func (w *Watcher) publish(ctx context.Context, b Breach, since time.Time) error {
	subject := fmt.Sprintf("hookpack %s: tenant %s %s", w.s.Stack, b.Tenant, b.Rule)
	attrs := map[string]snstypes.MessageAttributeValue{
		"tenant": {DataType: aws.String("String"), StringValue: aws.String(b.Tenant)},
		"rule":   {DataType: aws.String("String"), StringValue: aws.String(string(b.Rule))},
	}
	if b.Destination != "" {
		subject += " " + b.Destination + " (by " + string(b.Pause.By) + ")"
		attrs["destination"] = snstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(b.Destination)}
	}
	_, err := w.topic.Publish(ctx, &sns.PublishInput{
		TopicArn:          aws.String(w.s.TopicARN),
		Subject:           aws.String(subject[:min(len(subject), 100)]),
		Message:           aws.String(Message(w.s.Stack, b, since, w.s.Repeat[b.Rule])),
		MessageAttributes: attrs,
	})
	if err != nil {
		return fmt.Errorf("notify %s %s: %w", b.Tenant, b.Rule, err)
	}
	return nil
}

// Message is a notification's text.
func Message(stack string, b Breach, since time.Time, repeat time.Duration) string {
	var do string
	switch b.Rule {
	case OldestMessage:
		do = fmt.Sprintf("Check the tenant's target and the worker's logs (WorkerFunction, tenantId=%s); see where its events are:\n"+
			"  go run ./scripts/inspect -stack %s -tenant %s -summary", b.Tenant, stack, b.Tenant)
	case DestinationPaused:
		do = fmt.Sprintf("Fix the destination (an auto-pause names its last failure), then resume it: its waiting events are delivered in order.\n"+
			"  STACK_NAME=%s scripts/tenant/tenant.sh resume %s %s\n"+
			"  go run ./scripts/inspect -stack %s -tenant %s -summary", stack, b.Tenant, b.Destination, stack, b.Tenant)
	default:
		do = fmt.Sprintf("List the dead letters and their reasons, fix the cause, then replay them:\n"+
			"  go run ./scripts/inspect -stack %s -tenant %s -summary\n"+
			"  go run ./scripts/replay -stack %s -tenant %s list\n"+
			"  go run ./scripts/replay -stack %s -tenant %s redrive", stack, b.Tenant, stack, b.Tenant, stack, b.Tenant)
	}
	return fmt.Sprintf("Tenant %s of hookpack stack %s: %s.\nRule %s, breached since %s.\n\n%s\n\n"+
		"Repeated every %s while it lasts (docs/operations.md, \"Alerts\").\n",
		b.Tenant, stack, b.Describe(), b.Rule, since.UTC().Format(time.RFC3339), do, repeat)
}

// ScheduledEvent is the detail-type of the EventBridge schedule's events.
const ScheduledEvent = "Scheduled Event"

// Handle is the Lambda handler of the scheduled run: one log line per
// breach and per tenant the run could not judge, and one for the run. It
// returns an error (Lambda retries the scheduled invocation) only when the
// tenant list cannot be read. An event that is not the schedule's is
// answered without a run or an AWS call.
func (w *Watcher) Handle(ctx context.Context, ev events.EventBridgeEvent) error {
	if ev.DetailType != ScheduledEvent {
		w.logger.LogAttrs(ctx, slog.LevelInfo, "watch", slog.String("outcome", "ignored"), slog.String("detailType", ev.DetailType))
		return nil
	}
	start := w.now()
	rep, err := w.Run(ctx)
	notified := 0
	for _, n := range rep.Notices {
		if n.Notified {
			notified++
		}
		attrs := []slog.Attr{slog.String("tenantId", n.Tenant), slog.String("rule", string(n.Rule)),
			slog.Int64("value", n.Value), slog.Int64("threshold", n.Threshold), slog.Time("since", n.Since), slog.Bool("notified", n.Notified)}
		if n.Destination != "" {
			attrs = append(attrs, slog.String("destination", n.Destination), slog.String("pausedBy", string(n.Pause.By)))
		}
		w.logger.LogAttrs(ctx, slog.LevelWarn, "breach", attrs...)
	}
	for tenant, ferr := range rep.Failed {
		w.logger.LogAttrs(ctx, slog.LevelError, "tenant not watched", slog.String("tenantId", tenant), slog.String("error", ferr.Error()))
	}
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
	case len(rep.Failed) > 0:
		outcome = "partial"
	}
	attrs := []slog.Attr{slog.String("outcome", outcome), slog.Int("tenants", rep.Tenants), slog.Int("breaches", len(rep.Notices)),
		slog.Int("notified", notified), slog.Int("failed", len(rep.Failed)), slog.Int64("durationMs", w.now().Sub(start).Milliseconds())}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	w.logger.LogAttrs(ctx, slog.LevelInfo, "watch", attrs...)
	return err
}
