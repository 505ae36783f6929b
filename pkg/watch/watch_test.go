package watch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go/transport/http/protocol/awsjson"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/local/awscount"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/watch"
)

// fixture is a core stack's view on moto: tenant queues named as
// template-tenant.yaml names them, the tenant list in SSM, the state
// table, and the alarm topic with an SQS subscription to read it.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	stack   string
	sqs     *sqs.Client
	cw      *cloudwatch.Client
	inbox   string
	queues  map[string]provision.Pair
	setting watch.Settings
	dests   *destination.DynamoDB
}

func newFixture(t *testing.T, tenants ...string) *fixture {
	t.Helper()
	ctx := context.Background()
	cfg := awstest.Config(t, awstest.Moto(t))
	f := &fixture{t: t, ctx: ctx, stack: "w" + strings.ReplaceAll(awstest.Name(t)[len(awstest.Name(t))-9:], "-", ""), sqs: sqs.NewFromConfig(cfg),
		cw: cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.Protocol = awsjson.New10(schemas.GraniteServiceVersion20100801) }), queues: map[string]provision.Pair{}}
	for _, id := range tenants {
		p, err := provision.QueuePair(ctx, f.sqs, f.stack+"_"+id, provision.PairOptions{VisibilityTimeout: 180, MaxReceiveCount: 170})
		if err != nil {
			t.Fatal(err)
		}
		f.queues[id] = p
	}
	if _, err := ssm.NewFromConfig(cfg).PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/" + f.stack + "/tenant-ids/0"),
		Value: aws.String(strings.Join(tenants, ",")), Type: ssmtypes.ParameterTypeStringList}); err != nil {
		t.Fatal(err)
	}
	table := f.stack + "-idempotency"
	if err := provision.Idempotency(ctx, dynamodb.NewFromConfig(cfg), table); err != nil {
		t.Fatal(err)
	}
	ledger := f.stack + "-ledger"
	if err := provision.Ledger(ctx, dynamodb.NewFromConfig(cfg), ledger); err != nil {
		t.Fatal(err)
	}
	f.dests = destination.NewDynamoDB(dynamodb.NewFromConfig(cfg), ledger)
	sc := sns.NewFromConfig(cfg)
	topic, err := sc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(f.stack + "-alarms")})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := f.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(f.stack + "-inbox")})
	if err != nil {
		t.Fatal(err)
	}
	f.inbox = aws.ToString(inbox.QueueUrl)
	if _, err := sc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String("arn:aws:sqs:" + awstest.Region + ":123456789012:" + f.stack + "-inbox")}); err != nil {
		t.Fatal(err)
	}
	any := f.queues[tenants[0]].URL
	f.setting = watch.Settings{Stack: f.stack, StateTable: table, LedgerTable: ledger, TopicARN: aws.ToString(topic.TopicArn),
		QueueURLTemplate: strings.Replace(any, f.stack+"_"+tenants[0]+".fifo", f.stack+"_{tenant}.fifo", 1)}
	return f
}

func (f *fixture) send(url string, n int) {
	f.t.Helper()
	for i := range n {
		id := strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", "") + string(rune('a'+i))
		if _, err := f.sqs.SendMessage(f.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("{}"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(id)}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// age records the queue's ApproximateAgeOfOldestMessage at times, as SQS
// reports it to CloudWatch (moto's SQS reports nothing).
func (f *fixture) age(url string, age time.Duration, at ...time.Time) {
	f.t.Helper()
	name := url[strings.LastIndexByte(url, '/')+1:]
	for _, ts := range at {
		ts = ts.Add(-time.Minute) // the latest datapoint before the run
		if _, err := f.cw.PutMetricData(f.ctx, &cloudwatch.PutMetricDataInput{Namespace: aws.String("AWS/SQS"), MetricData: []cwtypes.MetricDatum{{
			MetricName: aws.String("ApproximateAgeOfOldestMessage"), Timestamp: aws.Time(ts), Value: aws.Float64(age.Seconds()),
			Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(name)}}}}}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// notifications returns the subjects published since the last call.
func (f *fixture) notifications() []string {
	f.t.Helper()
	var subjects []string
	for {
		out, err := f.sqs.ReceiveMessage(f.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.inbox), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			f.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			slices.Sort(subjects)
			return subjects
		}
		for _, m := range out.Messages {
			var env struct{ Subject, Message string }
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &env); err != nil {
				f.t.Fatalf("notification %s: %v", aws.ToString(m.Body), err)
			}
			if !strings.Contains(env.Message, "go run ./scripts/") {
				f.t.Errorf("notification %q names no command to run: %s", env.Subject, env.Message)
			}
			subjects = append(subjects, strings.TrimPrefix(env.Subject, "hookpack "+f.stack+": "))
			if _, err := f.sqs.DeleteMessage(f.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(f.inbox), ReceiptHandle: m.ReceiptHandle}); err != nil {
				f.t.Fatal(err)
			}
		}
	}
}

// TestWatchOnMoto runs the watch against moto's SQS, CloudWatch, SNS, SSM
// and DynamoDB: each rule fires for its tenant and names it (a paused
// destination too, while events wait for it), a tenant's own threshold (its
// queue's tag) is used, a lasting breach is not notified again within its
// repeat interval, and an idle tenant costs exactly two GetQueueAttributes
// requests per run and nothing else, a paused destination of its own
// included.
func TestWatchOnMoto(t *testing.T) {
	f := newFixture(t, "idle", "slow", "dead", "fresh")
	if _, err := f.sqs.TagQueue(f.ctx, &sqs.TagQueueInput{QueueUrl: aws.String(f.queues["slow"].URL), Tags: map[string]string{watch.ThresholdTag: "60"}}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Truncate(time.Second)
	runs := []time.Time{t0, t0.Add(5 * time.Minute), t0.Add(65 * time.Minute)}
	// slow's billing failed for 6 hours without a success: auto-paused.
	st, err := f.dests.Failed(f.ctx, "slow", "billing", "target unavailable: answered 503", t0.Add(-7*time.Hour), 6*time.Hour, destination.State{})
	if err == nil {
		st, err = f.dests.Failed(f.ctx, "slow", "billing", "target unavailable: answered 503", t0.Add(-time.Hour), 6*time.Hour, st)
	}
	if err != nil || st.Paused.By != destination.Auto {
		t.Fatalf("auto-pause: %+v, %v", st, err)
	}
	// idle's crm is paused with nothing waiting for it: no read, no alert.
	if _, err := f.dests.Pause(f.ctx, "idle", "crm", "maintenance", t0); err != nil {
		t.Fatal(err)
	}
	f.send(f.queues["slow"].URL, 2)
	f.age(f.queues["slow"].URL, 120*time.Second, runs...) // over its own 60 s, under the default 900 s
	f.send(f.queues["fresh"].URL, 1)
	f.age(f.queues["fresh"].URL, 10*time.Second, runs...)
	f.send(f.queues["dead"].DLQURL, 1)
	f.age(f.queues["dead"].DLQURL, 11*24*time.Hour, runs...)

	// The runs skip the ones between 5 and 65 minutes: a gap longer than
	// that keeps the breaches going (TestNext holds the gap's rule).
	f.setting.Gap = 90 * time.Minute
	scheduled := events.EventBridgeEvent{DetailType: watch.ScheduledEvent, Source: "aws.events"}
	now := t0
	counter := awscount.NewCalls() // what the watch asks: an emulator's dropped connection, retried, is no call of its own
	var logs bytes.Buffer
	w := watch.NewAWS(counter.Install(awstest.Config(t, awstest.Moto(t))), f.setting, "/"+f.stack, func() time.Time { return now },
		slog.New(slog.NewJSONHandler(&logs, nil)))

	want := []struct {
		notified []string
		requests map[string]int
	}{
		// GetItem: one per tenant whose queue holds messages (its
		// destinations' pauses), one per breach (its state).
		{[]string{"tenant dead dead-letters", "tenant dead dead-letters-expiring", "tenant slow destination-paused billing (by auto)", "tenant slow oldest-message"}, map[string]int{
			"SSM.GetParametersByPath": 1, "SQS.GetQueueAttributes": 8, "SQS.ListQueueTags": 2, "CloudWatch.GetMetricData": 1,
			"DynamoDB.GetItem": 6, "DynamoDB.PutItem": 4, "SNS.Publish": 4}},
		{nil, map[string]int{
			"SSM.GetParametersByPath": 1, "SQS.GetQueueAttributes": 8, "SQS.ListQueueTags": 2, "CloudWatch.GetMetricData": 1,
			"DynamoDB.GetItem": 6, "DynamoDB.PutItem": 4}},
		{[]string{"tenant slow oldest-message"}, map[string]int{ // hourly; dead letters and pauses daily
			"SSM.GetParametersByPath": 1, "SQS.GetQueueAttributes": 8, "SQS.ListQueueTags": 2, "CloudWatch.GetMetricData": 1,
			"DynamoDB.GetItem": 6, "DynamoDB.PutItem": 4, "SNS.Publish": 1}},
	}
	for i, run := range runs {
		now = run
		if err := w.Handle(f.ctx, scheduled); err != nil {
			t.Fatalf("run %d: Handle() = %v", i, err)
		}
		if got := f.notifications(); !slices.Equal(got, want[i].notified) {
			t.Errorf("run %d notified %q, want %q\nlogs:\n%s", i, got, want[i].notified, logs.String())
		}
		if got := counter.Take(); !maps.Equal(got, want[i].requests) {
			t.Errorf("run %d made requests %v, want %v", i, got, want[i].requests)
		}
	}
	if !strings.Contains(logs.String(), `"msg":"watch","outcome":"ok","tenants":4,"breaches":4,"notified":4`) {
		t.Errorf("no run line with the counts of the first run:\n%s", logs.String())
	}
	for _, secretish := range []string{"Body", "ReceiptHandle"} {
		if strings.Contains(logs.String(), secretish) {
			t.Errorf("logs mention %s:\n%s", secretish, logs.String())
		}
	}

	// The backlog drains and the dead letters are replayed: nothing is
	// notified, and every tenant is idle again (two requests each).
	now = t0.Add(70 * time.Minute)
	for _, id := range []string{"slow", "fresh"} {
		f.drain(f.queues[id].URL)
	}
	f.drain(f.queues["dead"].DLQURL)
	if err := w.Handle(f.ctx, scheduled); err != nil {
		t.Fatal(err)
	}
	if got := f.notifications(); len(got) != 0 {
		t.Errorf("after the queues emptied, notified %q", got)
	}
	if got, want := counter.Take(), map[string]int{"SSM.GetParametersByPath": 1, "SQS.GetQueueAttributes": 8}; !maps.Equal(got, want) {
		t.Errorf("idle run made requests %v, want %v", got, want)
	}
}

func (f *fixture) drain(url string) {
	f.t.Helper()
	if _, err := f.sqs.PurgeQueue(f.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		f.t.Fatal(err)
	}
}
