package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/ingest"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/apigw"
	"github.com/hookpack/hookpack/pkg/local/capture"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/local/rehearsal"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
	"github.com/hookpack/hookpack/pkg/worker"
)

// Options configure a run. Zero values take the defaults of `make chaos`.
type Options struct {
	// Seed fixes the workload and the fault schedule.
	Seed uint64
	// Deliveries is how many deliveries the providers send (10,000), a
	// share Duplicates (0.3) of them duplicates, over Conversations (120)
	// conversations split between two tenants.
	Deliveries    int
	Conversations int
	Duplicates    float64
	// Rates are the fault probabilities (DefaultRates).
	Rates Rates
	// Endpoint and DynamoDBEndpoint are running emulators (moto started
	// with package emulator, DynamoDB Local); empty starts them, DynamoDB
	// Local from DynamoDBLocalDir.
	Endpoint, DynamoDBEndpoint, DynamoDBLocalDir string
	// TemplateFile gives MaxReceiveCount and WorkerMaxAttempts their
	// deployed defaults (template.yaml).
	TemplateFile string
	// Pollers per tenant queue: the event source mapping's
	// MaximumConcurrency (template-tenant.yaml's TenantMaxConcurrency
	// default), as many invocations as Lambda runs on a FIFO queue whose
	// backlog spans at least that many message groups.
	Pollers int
	// Concurrency bounds the deliveries in flight at once (32).
	Concurrency int
	// DrainTimeout bounds the wait for the pipeline to empty (5 min).
	DrainTimeout time.Duration
	// Logger receives the functions' log lines (discarded when nil).
	Logger *slog.Logger
	// Progress receives a line every few seconds (none when nil).
	Progress io.Writer
	// Phase is the length of destTenant's fault-free phase (DefaultPhase;
	// see newPhases): long enough for each phase to hold p99Sample of
	// healthy's deliveries at destSendRate.
	Phase time.Duration
	// Unpaced configures destTenant's rated destination without its rate
	// (its target still enforces it): a broken pack, to see the report
	// catch it.
	Unpaced bool
}

// The run's shortened timeouts: the same ratios as template.yaml at a
// scale where leases and visibility timeouts expire within the run.
const (
	ingestTimeout     = 10 * time.Second
	workerTimeout     = 6 * time.Second
	workerMargin      = 1500 * time.Millisecond
	visibilityTimeout = 12 // seconds
	hang              = 500 * time.Millisecond
	slowTarget        = 1500 * time.Millisecond
	deliveryDeadline  = 3 * time.Minute
	// effectTimeout is every effect's budget (custom effects' EffectTimeout,
	// the tenants' target timeout): an effect starts only when it fits
	// before the work deadline (timeout less margin).
	effectTimeout = 2 * time.Second
	// effectHang is how long a hung custom effect blocks: past the function
	// timeout and the retry that takes its message over.
	effectHang = 2 * workerTimeout
	// redriveReceives is the redrive tenant's maxReceiveCount: each receive
	// of a crashing message waits out the 12 s visibility timeout, so SQS
	// moves it after more than a minute, as SQS's redrive in AWS comes long
	// after the event was received (what the worker recognises a redrive by).
	redriveReceives = 6
	// The outage tenant's target is down for outagePeriod from the start;
	// its worker is configured with a queue retention of outageRetention and
	// an expiry margin of outageMargin, so its retry horizon — the age at
	// which a failing or waiting message is dead-lettered rather than left
	// to expire — is 40 s, within the outage and within the run.
	outagePeriod    = 75 * time.Second
	outageRetention = 2 * time.Minute
	outageMargin    = 80 * time.Second
)

func (o *Options) defaults() {
	if o.Deliveries <= 0 {
		o.Deliveries = 10000
	}
	if o.Conversations <= 0 {
		o.Conversations = 120
	}
	if o.Duplicates <= 0 {
		o.Duplicates = 0.3
	}
	if o.Rates == nil {
		o.Rates = DefaultRates()
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 5 * time.Minute
	}
	if o.Phase <= 0 {
		o.Phase = DefaultPhase
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// Run drives the whole local pipeline through the faults and reports what
// it saw. Its error is about the run itself (an emulator that would not
// start); the pack's failures are in the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	maxReceive, err := templateDefault(o.TemplateFile, "MaxReceiveCount")
	if err != nil {
		return nil, err
	}
	maxAttempts, err := templateDefault(o.TemplateFile, "WorkerMaxAttempts")
	if err != nil {
		return nil, err
	}
	if o.Pollers <= 0 {
		if o.Pollers, err = templateDefault(o.TemplateFile, "TenantMaxConcurrency"); err != nil {
			return nil, err
		}
	}
	var stop func()
	if o.Endpoint, stop, err = emulator.Moto(ctx, o.Endpoint); err != nil {
		return nil, err
	}
	defer stop()
	if o.DynamoDBEndpoint, stop, err = emulator.DynamoDBLocal(ctx, o.DynamoDBEndpoint, o.DynamoDBLocalDir); err != nil {
		return nil, err
	}
	defer stop()
	cfg, err := emulator.AWSConfig(ctx, o.Endpoint, o.DynamoDBEndpoint)
	if err != nil {
		return nil, err
	}

	listen := func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
	apiL, err := listen()
	if err != nil {
		return nil, err
	}
	targetL, err := listen()
	if err != nil {
		apiL.Close()
		return nil, err
	}
	file := &tenant.File{Tenants: map[string]tenant.FileTenant{}}
	outbound := map[string]tenant.Outbound{}
	for id, settings := range tenants {
		url, secrets := "http://"+targetL.Addr().String()+"/tenants/"+id+"/events", []string{"whsec_Y2hhb3MtdGFyZ2V0LXNlY3JldC0x"}
		out := tenant.Outbound{TargetURL: url, Secrets: secrets, Timeout: effectTimeout.String()}
		if id == destTenant {
			out = tenant.Outbound{Destinations: destinations(url, secrets, !o.Unpaced)}
		}
		file.Tenants[id] = tenant.FileTenant{
			Inbound:  tenant.Inbound{Providers: map[string]webhook.Config{providerName: {Secrets: []string{"chaos-" + id + "-secret"}, Settings: settings}}},
			Outbound: out,
		}
		outbound[id] = out
	}
	name := fmt.Sprintf("chaos-%d-%d", o.Seed%100000, time.Now().UnixNano()%1_000_000)
	dep, err := devstack.Provision(ctx, cfg, name, file, provision.PairOptions{VisibilityTimeout: visibilityTimeout, MaxReceiveCount: maxReceive})
	if err != nil {
		apiL.Close()
		targetL.Close()
		return nil, err
	}

	plain := sqs.NewFromConfig(cfg)
	if err := setMaxReceiveCount(ctx, plain, dep.Queues[redriveTenant], redriveReceives); err != nil {
		apiL.Close()
		targetL.Close()
		return nil, err
	}

	// Every request of each function, the mapping's included (Lambda polls
	// with the worker's role), is checked against template.yaml's roles.
	calls, err := capture.NewRecorder("")
	if err != nil {
		return nil, err
	}
	function := map[string]string{roleIngest: "IngestFunction", roleWorker: "WorkerFunction", roleESM: "WorkerFunction"}
	f := newFaults(o.Seed, o.Rates, hang)
	w := newWorkload(o.Seed, o.Deliveries, o.Conversations, o.Duplicates, o.Rates[Poison])
	tgt := newTarget(outbound, f, w.isPoison, slowTarget)
	custom := newCustomEffects(f, w.isPoison, f.chained, effectHang)
	withFaults := func(role string) aws.Config {
		c := cfg.Copy()
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.MaxIdleConnsPerHost = 256
		c.HTTPClient = &http.Client{Transport: calls.Transport(function[role], &transport{base: base, f: f, role: role, ledgerTable: dep.Worker.LedgerTable})}
		return c
	}

	ih := ingest.NewAWS(withFaults(roleIngest), dep.Settings, o.Logger)
	api := &http.Server{Handler: apigw.Server(devstack.Route, dying(ih.Handle), ingestTimeout, o.Logger), ReadHeaderTimeout: 5 * time.Second}
	target := &http.Server{Handler: tgt, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = api.Serve(apiL) }()
	go func() { _ = target.Serve(targetL) }()
	defer api.Close()
	defer target.Close()

	ws := dep.Worker
	ws.SafetyMargin, ws.RetryBase, ws.RetryMax, ws.MaxAttempts = workerMargin, time.Second, 4*time.Second, maxAttempts
	ws.EffectTimeout = effectTimeout
	wcfg := withFaults(roleWorker)
	// The production wiring (the forward for every event) plus the custom
	// tenant's effects; the outage tenant's worker sees a short retention.
	// destTenant's event types have a custom effect each, beside their
	// destinations (no other tenant sends them).
	register := func(r *worker.Registry) {
		for _, typ := range append([]string{customType}, destTypes...) {
			r.Handle(providerName, typ, custom.handle)
		}
	}
	wh := worker.NewAWS(wcfg, ws, o.Logger, register)
	outage := ws
	outage.QueueRetention, outage.ExpiryMargin = outageRetention, outageMargin
	outageWorker := worker.NewAWS(wcfg, outage, o.Logger, register)
	esmClient := sqs.NewFromConfig(withFaults(roleESM))
	payloads := queue.NewPayloads(queue.NewS3(cfg), dep.Worker.PayloadBucket)
	done := func(env *envelope.Envelope, stream queue.Stream) {
		// The ack of a message completes every effect the forward ran:
		// the destinations the event selects, or the targetUrl's; a
		// stream's message only its destination's (none for the custom
		// effects' stream).
		effects := []string{worker.ForwardEffect}
		if out := outbound[env.Tenant]; out.TargetURL == "" {
			effects = nil
			body, _ := env.RawBody()
			for _, d := range out.Match(route.NewEvent(env.Provider, env.Type, body)) {
				if stream == (queue.Stream{}) || d.Name == stream.Destination {
					effects = append(effects, worker.DestinationEffect(d.Name))
				}
			}
		}
		for _, e := range effects {
			f.recordDone(ledger.Key{Tenant: env.Tenant, Event: env.Key, Effect: e})
		}
	}
	expired := &eventSet{ids: map[string]bool{}}
	pctx, stopPollers := context.WithCancel(context.WithoutCancel(ctx))
	var pollers sync.WaitGroup
	for _, id := range file.IDs() {
		p := &poller{f: f, client: esmClient, plain: plain, payloads: payloads, url: dep.Queues[id].URL, handle: wh.Handle, done: done}
		switch id {
		case outageTenant:
			p.handle, p.retention, p.expired = outageWorker.Handle, outageRetention, expired
		case destTenant:
			p.disturbed = tgt.disturb
		case redriveTenant:
			p.chain = true
			pollers.Go(func() { redrive(pctx, f, plain, dep.Queues[id].DLQURL) })
		}
		for range o.Pollers {
			pollers.Go(func() { p.run(pctx) })
		}
	}
	defer func() { stopPollers(); pollers.Wait() }()

	s, err := newSender("http://"+apiL.Addr().String(), file, f.dice, deliveryDeadline, o.Concurrency)
	if err != nil {
		return nil, err
	}
	queueURLs := map[string]string{}
	for id, q := range dep.Queues {
		queueURLs[id] = q.URL
	}
	// The gate reads with plain: the harness's client, not the pack's.
	s.gate = newGate(plain, backlogBatches*batchSize*o.Pollers, queueURLs)
	gctx, stopGate := context.WithCancel(ctx)
	var gating sync.WaitGroup
	gating.Go(func() { s.gate.run(gctx) })
	r := &Report{Seed: o.Seed, MaxReceiveCount: maxReceive, MaxAttempts: maxAttempts, Pollers: o.Pollers, BacklogBound: s.gate.bound}
	r.phases = newPhases(o.Phase)
	start := time.Now()
	tgt.outageUntil, tgt.start, tgt.phases = start.Add(outagePeriod), start, r.phases
	s.phases = r.phases
	progress := startProgress(o.Progress, tgt, s, start)
	var problems eventSet
	problems.ids = map[string]bool{}
	pollers.Go(func() {
		pause(pctx, destination.NewDynamoDB(dynamodb.NewFromConfig(cfg), dep.Worker.LedgerTable), start, r.phases, problems.add)
	})
	s.run(ctx, w)
	r.SendTime = time.Since(start)
	stopGate()
	gating.Wait()
	r.Backlog, _ = s.gate.readings()
	// The redrive tenant's DLQ is drained too: its dead letters go back.
	urls := []string{dep.Queues[redriveTenant].DLQURL}
	for _, q := range dep.Queues {
		urls = append(urls, q.URL)
	}
	drained := waitDrained(ctx, plain, urls, o.DrainTimeout)
	r.DrainTime = time.Since(start) - r.SendTime
	progress()
	r.Drained = drained == nil
	if drained != nil {
		r.Problems = append(r.Problems, drained.Error())
	}
	r.Paused = append(r.Paused, problems.list()...)
	dead, err := readDLQs(ctx, plain, payloads, dep.Queues)
	if err != nil {
		return nil, err
	}
	r.compute(w, s, tgt, custom, f, dead, expired.list())
	r.computeDestinations(w, tgt, custom, destinations("", nil, true), dead)
	r.IAM, err = checkIAM(ctx, o.TemplateFile, name, dep, calls.Calls())
	return r, err
}

// dying adapts the ingest handler to a Lambda instance that may die: its
// invocation carries a handle the fault transport kills; a dead invocation
// answers like API Gateway does for a crashed function (500).
func dying(h apigw.Handler) apigw.Handler {
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		ctx, inv := newInvocation(ctx)
		defer inv.cancel()
		resp, err := h(ctx, req)
		if inv.dead.Load() {
			return events.APIGatewayV2HTTPResponse{}, errDied
		}
		return resp, err
	}
}

type pollAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// poller is one of the event source mapping's pollers for url, as
// esm.Poller (esm.Invoke: a handler still running at the function timeout
// fails the whole batch), with each batch an invocation the faults can
// kill (nothing is then deleted) or whose visibility they can expire while
// it runs, a deletion the faults can lose, and a batch the faults can
// invoke twice.
type poller struct {
	f             *Faults
	client, plain pollAPI
	payloads      *queue.Payloads
	url           string
	handle        esm.SQSHandler
	// chain: the queue of the redrive tenant, whose forwarded events the
	// run chose die before the ack on every delivery of their first message.
	chain bool
	// retention, when set, is the queue retention the worker was given:
	// a message received later than that after it was sent had expired
	// (SQS would have deleted it unseen); its event goes to expired.
	retention time.Duration
	expired   *eventSet
	// done records the effects of an acked message's event as done.
	done func(*envelope.Envelope, queue.Stream)
	// disturbed, when set, is told of the messages an injected process
	// fault delayed: a killed or timed-out invocation's, and those that
	// failed in an invocation an AWS fault touched (destTenant's queue).
	disturbed func(context.Context, *queue.Payloads, []events.SQSMessage)
}

func (p *poller) run(ctx context.Context) {
	for ctx.Err() == nil {
		ev, err := esm.Receive(ctx, p.client, p.url, esm.ReceiveOptions{WaitSeconds: 1})
		if err != nil {
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		if len(ev.Records) == 0 {
			continue
		}
		p.checkRetention(ctx, ev)
		// Lambda's invocation is at least once: the same batch may run in
		// two invocations at the same time, each answered to the mapping.
		if p.f.dice.roll("twice|"+ev.Records[0].Attributes["MessageDeduplicationId"]) < p.f.rates[InvokedTwice] {
			p.f.count(InvokedTwice)
			var wg sync.WaitGroup
			wg.Go(func() { p.invoke(ctx, ev) })
			p.invoke(ctx, ev)
			wg.Wait()
			continue
		}
		p.invoke(ctx, ev)
	}
}

// invoke runs one invocation of ev and settles its answer.
func (p *poller) invoke(ctx context.Context, ev events.SQSEvent) {
	ictx, inv := newInvocation(ctx)
	inv.expire = func() { expire(p.plain, p.url, ev) }
	resp, err := esm.Invoke(ictx, p.handle, ev, workerTimeout)
	inv.cancel()
	if p.disturbed != nil && (inv.dead.Load() || err != nil) {
		p.disturbed(context.WithoutCancel(ctx), p.payloads, ev.Records)
	} else if p.disturbed != nil && inv.faulted.Load() {
		// An AWS fault the SDK retried costs a message nothing it would
		// not in AWS; one that failed it delays it by a backoff.
		p.disturbed(context.WithoutCancel(ctx), p.payloads, failedRecords(ev, resp))
	}
	if inv.dead.Load() || err != nil { // died or timed out: nothing is deleted
		return
	}
	key := ev.Records[0].Attributes["MessageDeduplicationId"]
	switch {
	case p.chain && p.crashesBeforeAck(ctx, ev):
		return
	case p.f.dice.roll("ack-death|"+key) < p.f.rates[WorkerDiesBeforeAck]:
		// The instance dies once its effects ran, before it answers.
		p.f.count(WorkerDiesBeforeAck)
		return
	case p.f.dice.roll("deletion|"+key) < p.f.rates[DeletionLost]:
		// The mapping's DeleteMessageBatch is lost: the batch comes back
		// after its visibility timeout although the handler settled it.
		p.f.count(DeletionLost)
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if esm.Settle(sctx, p.client, p.url, ev, resp) == nil { // a failed delete redelivers
		acked(sctx, p.payloads, ev, resp, p.done)
	}
}

// failedRecords are the records of ev that resp reports failed.
func failedRecords(ev events.SQSEvent, resp events.SQSEventResponse) []events.SQSMessage {
	failed := map[string]bool{}
	for _, x := range resp.BatchItemFailures {
		failed[x.ItemIdentifier] = true
	}
	var out []events.SQSMessage
	for _, r := range ev.Records {
		if failed[r.MessageId] {
			out = append(out, r)
		}
	}
	return out
}

// crashesBeforeAck reports whether ev holds the first message of a
// forwarded event whose instance the run kills after the effect on every
// delivery (RedrivenAfterCrash; a custom event's crash is inside its
// effect, see customEffects).
func (p *poller) crashesBeforeAck(ctx context.Context, ev events.SQSEvent) bool {
	for _, r := range ev.Records {
		_, pointer := r.MessageAttributes[queue.SizeAttribute]
		env, err := decode(ctx, p.payloads, r.Body, pointer)
		if err == nil && env.Type != customType && p.f.chained(env.Tenant, env.EventID) && p.f.original(env.Key, r.MessageId) {
			return true
		}
	}
	return false
}

// checkRetention records the events of messages received past their
// queue retention.
func (p *poller) checkRetention(ctx context.Context, ev events.SQSEvent) {
	if p.retention == 0 {
		return
	}
	for _, r := range ev.Records {
		ms, err := strconv.ParseInt(r.Attributes["SentTimestamp"], 10, 64)
		if err != nil || time.Since(time.UnixMilli(ms)) < p.retention {
			continue
		}
		_, pointer := r.MessageAttributes[queue.SizeAttribute]
		if env, err := decode(ctx, p.payloads, r.Body, pointer); err == nil {
			p.expired.add(fmt.Sprintf("%s/%s: received %v after it was sent, past its %v retention", env.Tenant, env.EventID, time.Since(time.UnixMilli(ms)).Round(time.Second), p.retention))
		}
	}
}

// eventSet is a set of strings safe for concurrent use.
type eventSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (s *eventSet) add(id string) {
	s.mu.Lock()
	s.ids[id] = true
	s.mu.Unlock()
}

func (s *eventSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.ids))
}

// setMaxReceiveCount changes the redrive policy of q's source queue.
func setMaxReceiveCount(ctx context.Context, client *sqs.Client, q provision.Pair, n int) error {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.DLQURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return fmt.Errorf("dlq arn of %s: %w", q.URL, err)
	}
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, out.Attributes[string(types.QueueAttributeNameQueueArn)], n)
	_, err = client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(q.URL), Attributes: map[string]string{"RedrivePolicy": policy}})
	if err != nil {
		return fmt.Errorf("redrive policy of %s: %w", q.URL, err)
	}
	return nil
}

// redrive does what an operator does with dead letters: every 2 s, when
// dlqURL holds messages, a DLQ redrive (StartMessageMoveTask) moves them
// back to the queue SQS took them from, each as a new message.
func redrive(ctx context.Context, f *Faults, client *sqs.Client, dlqURL string) {
	arn := esm.ARNOf(dlqURL, emulator.Region)
	for ctx.Err() == nil {
		sleep(ctx, 2*time.Second)
		out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(dlqURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
		})
		if err != nil || out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)] == "0" {
			continue
		}
		if _, err := client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arn)}); err != nil {
			continue
		}
		tasks, err := client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arn)})
		if err == nil && len(tasks.Results) > 0 {
			f.add(RedrivenAfterCrash, int(tasks.Results[0].ApproximateNumberOfMessagesMoved))
		}
	}
}

// acked records the effects of the messages the mapping deleted as done:
// sending one again afterwards would apply it twice.
func acked(ctx context.Context, payloads *queue.Payloads, ev events.SQSEvent, resp events.SQSEventResponse, done func(*envelope.Envelope, queue.Stream)) {
	failed := map[string]bool{}
	for _, x := range resp.BatchItemFailures {
		failed[x.ItemIdentifier] = true
	}
	for _, r := range ev.Records {
		_, pointer := r.MessageAttributes[queue.SizeAttribute]
		stream, serr := queue.StreamOf(r.MessageAttributes)
		if env, err := decode(ctx, payloads, r.Body, pointer); err == nil && serr == nil && !failed[r.MessageId] {
			done(env, stream)
		}
	}
}

// expire makes every message of ev visible again, as if its visibility
// timeout had run out.
func expire(client pollAPI, url string, ev events.SQSEvent) {
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(ev.Records))
	for i, r := range ev.Records {
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r.ReceiptHandle)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
}

type attributesAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// waitDrained waits until every queue of urls is empty (nothing visible,
// nothing in flight) on two checks in a row.
func waitDrained(ctx context.Context, client attributesAPI, urls []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	empty := 0
	for {
		left := 0
		for _, url := range urls {
			out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(url),
				AttributeNames: []types.QueueAttributeName{
					types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
				},
			})
			if err != nil {
				return err
			}
			for _, v := range out.Attributes {
				n, _ := strconv.Atoi(v)
				left += n
			}
		}
		if left == 0 {
			if empty++; empty == 2 {
				return nil
			}
		} else {
			empty = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d messages still queued after the %v drain timeout", left, timeout)
		}
		sleep(ctx, 500*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// deadLetter is one message found in a DLQ.
type deadLetter struct {
	tenant, eventID, reason string
	// stream is its destination's name, customStream for the custom
	// effects' stream, "" for a message of no stream.
	stream string
	// sent is when the dead letter reached the DLQ (its SentTimestamp).
	sent time.Time
}

// readDLQs receives every message of every tenant's DLQ.
func readDLQs(ctx context.Context, client *sqs.Client, payloads *queue.Payloads, queues map[string]provision.Pair) ([]deadLetter, error) {
	var out []deadLetter
	for _, q := range queues {
		for {
			resp, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(q.DLQURL), MaxNumberOfMessages: 10, VisibilityTimeout: 600,
				MessageAttributeNames:       []string{"All"},
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameSentTimestamp},
			})
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", q.DLQURL, err)
			}
			if len(resp.Messages) == 0 {
				break
			}
			for _, m := range resp.Messages {
				// Delete what was read: a FIFO group stays locked while a
				// message of it is in flight, which would hide the next dead
				// letter of the same conversation.
				if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.DLQURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
					return nil, fmt.Errorf("read %s: %w", q.DLQURL, err)
				}
				d := deadLetter{reason: aws.ToString(m.MessageAttributes[worker.AttrReason].StringValue)}
				if s, err := queue.ParseStream(aws.ToString(m.MessageAttributes[queue.AttrStream].StringValue)); err == nil {
					d.stream = s.Destination
					if s.Destination == "" && s.Effects {
						d.stream = customStream
					}
				}
				if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
					d.sent = time.UnixMilli(ms)
				}
				_, pointer := m.MessageAttributes[queue.SizeAttribute]
				if env, err := decode(ctx, payloads, aws.ToString(m.Body), pointer); err == nil {
					d.tenant, d.eventID = env.Tenant, env.EventID
				}
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// decode returns the envelope a message carries, reading it from the
// payload bucket when the body is a pointer (as the worker does).
func decode(ctx context.Context, payloads *queue.Payloads, body string, pointer bool) (*envelope.Envelope, error) {
	b := []byte(body)
	if pointer {
		var err error
		if b, err = payloads.Get(ctx, body); err != nil {
			return nil, err
		}
	}
	return envelope.Decode(b)
}

// startProgress prints a line every 5 s until the returned stop is called.
func startProgress(w io.Writer, t *target, s *sender, start time.Time) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				t.mu.Lock()
				applied := t.applied
				t.mu.Unlock()
				s.mu.Lock()
				attempts := s.attempts
				s.mu.Unlock()
				_, last := s.gate.readings()
				others := 0
				for id, n := range last {
					if id != destTenant {
						others += n
					}
				}
				fmt.Fprintf(w, "%6.0fs  %d HTTP requests sent, %d effects applied; visible messages: %s %d, the others %d\n", time.Since(start).Seconds(), attempts, applied, destTenant, last[destTenant], others)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// templateDefault reads a parameter's Default from the core template (file)
// or, for per-tenant settings such as MaxReceiveCount, from the tenant
// stack's template beside it (template-tenant.yaml).
func templateDefault(file, param string) (int, error) {
	if file == "" {
		return 0, errors.New("chaos: Options.TemplateFile is required")
	}
	for _, f := range []string{file, filepath.Join(filepath.Dir(file), "template-tenant.yaml")} {
		n, found, err := parameterDefault(f, param)
		if found || err != nil {
			return n, err
		}
	}
	return 0, fmt.Errorf("%s: no Default for parameter %s", filepath.Base(file), param)
}

// parameterDefault reads param's Default from one template file.
func parameterDefault(file, param string) (int, bool, error) {
	fh, err := os.Open(file)
	if err != nil {
		return 0, false, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") {
			in = strings.TrimSpace(line) == param+":"
			continue
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Default:"); ok && in {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, true, err
		}
	}
	return 0, false, sc.Err()
}

// IAM is the check of a run's AWS requests against template.yaml's roles.
type IAM struct {
	Calls  int      // requests recorded
	Denied []string // calls no statement allows
	Unused []string // granted (action, resource) pairs no call used
}

// checkIAM evaluates the run's calls against the roles template declares,
// resolved for the deployment Provision made (the names template.yaml
// gives a stack called name).
func checkIAM(ctx context.Context, template, name string, dep devstack.Deployment, calls []capture.Call) (IAM, error) {
	resources := map[string]rehearsal.Resource{
		"IdempotencyTable": {Type: "AWS::DynamoDB::Table", Physical: dep.Settings.IdempotencyTable},
		"LedgerTable":      {Type: "AWS::DynamoDB::Table", Physical: dep.Worker.LedgerTable},
		"PayloadBucket":    {Type: "AWS::S3::Bucket", Physical: dep.Worker.PayloadBucket},
		// The watch's resources: the run does not call it, so its grants
		// are only resolved.
		"AlarmTopic":    {Type: "AWS::SNS::Topic", Physical: "arn:aws:sns:" + rehearsal.Region + ":" + rehearsal.Account + ":" + name + "-alarms"},
		"AlarmTopicKey": {Type: "AWS::KMS::Key", Physical: name + "-alarm-key"},
	}
	v, denied, err := rehearsal.CheckDeployment(ctx, template, name, resources, calls)
	if err != nil {
		return IAM{}, fmt.Errorf("iam: %w", err)
	}
	out := IAM{Calls: len(calls), Denied: denied}
	for _, f := range v.Functions {
		for _, g := range f.Grants {
			if g.Effect == "Allow" && g.Used == 0 {
				out.Unused = append(out.Unused, f.Name+" "+g.Sid+" "+g.Action+" "+g.Resource)
			}
		}
	}
	return out, nil
}
