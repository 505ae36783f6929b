package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/ingest"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/apigw"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/local/rehearsal"
	"github.com/hookpack/hookpack/pkg/queue"
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
	// Pollers per tenant queue, as the event source mapping's concurrency (3).
	Pollers int
	// Concurrency bounds the deliveries in flight at once (32).
	Concurrency int
	// DrainTimeout bounds the wait for the pipeline to empty (5 min).
	DrainTimeout time.Duration
	// Logger receives the functions' log lines (discarded when nil).
	Logger *slog.Logger
	// Progress receives a line every few seconds (none when nil).
	Progress io.Writer
}

// The run's shortened timeouts: the same ratios as template.yaml at a
// scale where leases and visibility timeouts expire within the run.
const (
	ingestTimeout     = 10 * time.Second
	ingestLease       = 5 * time.Second
	workerTimeout     = 6 * time.Second
	workerMargin      = 1500 * time.Millisecond
	visibilityTimeout = 12 // seconds
	hang              = 500 * time.Millisecond
	slowTarget        = 1500 * time.Millisecond
	deliveryDeadline  = 3 * time.Minute
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
	if o.Pollers <= 0 {
		o.Pollers = 3
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 5 * time.Minute
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
	if o.Endpoint == "" {
		p, err := emulator.StartMoto(ctx, 0)
		if err != nil {
			return nil, err
		}
		defer p.Stop()
		o.Endpoint = p.Endpoint
	}
	if o.DynamoDBEndpoint == "" {
		p, err := emulator.StartDynamoDBLocal(ctx, o.DynamoDBLocalDir, 0)
		if err != nil {
			return nil, err
		}
		defer p.Stop()
		o.DynamoDBEndpoint = p.Endpoint
	}
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
		out := tenant.Outbound{
			TargetURL: "http://" + targetL.Addr().String() + "/tenants/" + id + "/events",
			Secrets:   []string{"whsec_Y2hhb3MtdGFyZ2V0LXNlY3JldC0x"},
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

	// Every request of each function, the mapping's included (Lambda polls
	// with the worker's role), is checked against template.yaml's roles.
	calls, err := rehearsal.NewRecorder("")
	if err != nil {
		return nil, err
	}
	function := map[string]string{roleIngest: "IngestFunction", roleWorker: "WorkerFunction", roleESM: "WorkerFunction"}
	f := newFaults(o.Seed, o.Rates, hang)
	w := newWorkload(o.Seed, o.Deliveries, o.Conversations, o.Duplicates, o.Rates[Poison])
	tgt := newTarget(outbound, f, w.isPoison, slowTarget)
	withFaults := func(role string) aws.Config {
		c := cfg.Copy()
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.MaxIdleConnsPerHost = 256
		c.HTTPClient = &http.Client{Transport: calls.Transport(function[role], &transport{base: base, f: f, role: role, ledgerTable: dep.Worker.LedgerTable})}
		return c
	}

	settings := dep.Settings
	settings.Lease = ingestLease
	ih := ingest.NewAWS(withFaults(roleIngest), settings, o.Logger)
	api := &http.Server{Handler: apigw.Server(devstack.Route, dying(ih.Handle), ingestTimeout, o.Logger), ReadHeaderTimeout: 5 * time.Second}
	target := &http.Server{Handler: tgt, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = api.Serve(apiL) }()
	go func() { _ = target.Serve(targetL) }()
	defer api.Close()
	defer target.Close()

	ws := dep.Worker
	ws.SafetyMargin, ws.RetryBase, ws.RetryMax, ws.MaxAttempts = workerMargin, time.Second, 4*time.Second, maxAttempts
	wh := worker.NewAWS(withFaults(roleWorker), ws, o.Logger)
	esmClient := sqs.NewFromConfig(withFaults(roleESM))
	plain := sqs.NewFromConfig(cfg)
	payloads := queue.NewPayloads(queue.NewS3(cfg), dep.Worker.PayloadBucket)
	pctx, stopPollers := context.WithCancel(context.WithoutCancel(ctx))
	var pollers sync.WaitGroup
	for _, id := range file.IDs() {
		for range o.Pollers {
			pollers.Go(func() { poll(pctx, f, esmClient, plain, payloads, dep.Queues[id].URL, wh.Handle) })
		}
	}
	defer func() { stopPollers(); pollers.Wait() }()

	s, err := newSender("http://"+apiL.Addr().String(), file, f.dice, deliveryDeadline, o.Concurrency)
	if err != nil {
		return nil, err
	}
	r := &Report{Seed: o.Seed, MaxReceiveCount: maxReceive, MaxAttempts: maxAttempts}
	start := time.Now()
	progress := startProgress(o.Progress, tgt, s, start)
	s.run(ctx, w)
	r.SendTime = time.Since(start)
	drained := waitDrained(ctx, plain, dep.Queues, o.DrainTimeout)
	r.DrainTime = time.Since(start) - r.SendTime
	progress()
	r.Drained = drained == nil
	if drained != nil {
		r.Problems = append(r.Problems, drained.Error())
	}
	dead, err := readDLQs(ctx, plain, payloads, dep.Queues)
	if err != nil {
		return nil, err
	}
	r.compute(w, s, tgt, f, dead)
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

// poll is one of the event source mapping's pollers for url, as
// esm.Poller, with each batch an invocation the faults can kill (nothing is
// then deleted) or whose visibility they can expire while it runs.
func poll(ctx context.Context, f *Faults, client, plain pollAPI, payloads *queue.Payloads, url string, handle esm.SQSHandler) {
	for ctx.Err() == nil {
		ev, err := esm.Receive(ctx, client, url, esm.ReceiveOptions{WaitSeconds: 1})
		if err != nil {
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		if len(ev.Records) == 0 {
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, workerTimeout)
		ictx, inv := newInvocation(ictx)
		inv.expire = func() { expire(plain, url, ev) }
		resp, err := handle(ictx, ev)
		cancel()
		if inv.dead.Load() || err != nil {
			continue
		}
		// The instance may die once its effects ran, before it answers.
		if f.dice.roll("ack-death|"+ev.Records[0].Attributes["MessageDeduplicationId"]) < f.rates[WorkerDiesBeforeAck] {
			f.count(WorkerDiesBeforeAck)
			continue
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if esm.Settle(sctx, client, url, ev, resp) == nil { // a failed delete redelivers
			acked(sctx, f, payloads, ev, resp)
		}
		cancel()
	}
}

// acked records the effects of the messages the mapping deleted as done:
// sending one again afterwards would apply it twice.
func acked(ctx context.Context, f *Faults, payloads *queue.Payloads, ev events.SQSEvent, resp events.SQSEventResponse) {
	failed := map[string]bool{}
	for _, x := range resp.BatchItemFailures {
		failed[x.ItemIdentifier] = true
	}
	for _, r := range ev.Records {
		_, pointer := r.MessageAttributes[queue.SizeAttribute]
		if env, err := decode(ctx, payloads, r.Body, pointer); err == nil && !failed[r.MessageId] {
			f.recordDone(ledger.Key{Tenant: env.Tenant, Event: env.Key, Effect: worker.ForwardEffect})
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

// waitDrained waits until every tenant queue is empty (nothing visible,
// nothing in flight) on two checks in a row.
func waitDrained(ctx context.Context, client attributesAPI, queues map[string]provision.Pair, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	empty := 0
	for {
		left := 0
		for _, q := range queues {
			out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(q.URL),
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
}

// readDLQs receives every message of every tenant's DLQ.
func readDLQs(ctx context.Context, client *sqs.Client, payloads *queue.Payloads, queues map[string]provision.Pair) ([]deadLetter, error) {
	var out []deadLetter
	for _, q := range queues {
		for {
			resp, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(q.DLQURL), MaxNumberOfMessages: 10, VisibilityTimeout: 600,
				MessageAttributeNames: []string{"All"},
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
				fmt.Fprintf(w, "%6.0fs  %d HTTP requests sent, %d effects applied\n", time.Since(start).Seconds(), attempts, applied)
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
func checkIAM(ctx context.Context, template, name string, dep devstack.Deployment, calls []rehearsal.Call) (IAM, error) {
	resources := map[string]rehearsal.Resource{
		"IdempotencyTable": {Type: "AWS::DynamoDB::Table", Physical: dep.Settings.IdempotencyTable},
		"LedgerTable":      {Type: "AWS::DynamoDB::Table", Physical: dep.Worker.LedgerTable},
		"PayloadBucket":    {Type: "AWS::S3::Bucket", Physical: dep.Worker.PayloadBucket},
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
