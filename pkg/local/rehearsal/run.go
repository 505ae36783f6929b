package rehearsal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigatewayv2"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/local/apigw"
	"github.com/hookpack/hookpack/pkg/local/bootstrap"
	"github.com/hookpack/hookpack/pkg/local/capture"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/local/runtimeapi"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/watch"
)

// Options configure a rehearsal.
type Options struct {
	// Root is the module root (template.yaml, scripts/, events/).
	Root string
	// Endpoint is a running moto server to use; empty starts one (the
	// project's patched moto, package emulator).
	Endpoint string
	// StackName is the core stack's name (default "hookpack"); the tenant
	// stack is "<StackName>-tenant-<Tenant>".
	StackName string
	// Tenant is the tenant of events/tenants.json onboarded with
	// tenant.sh (default "demo", which enables every provider).
	Tenant string
	// Mutate, when set, changes the rendered core template before it is
	// created (the negative check removes a statement with it). The
	// unchanged template stays the declared one the report compares with.
	Mutate func(Template)
	// BinDir holds <function>/bootstrap built for this machine; Run builds
	// them there once per process (default <Root>/bin/local, where make
	// invoke builds), or takes $HOOKPACK_BOOTSTRAP_DIR's (package bootstrap).
	BinDir string
	// Settle bounds the wait for every delivery to reach its end (default 2 minutes).
	Settle time.Duration
	// Logf receives progress lines; Logs the functions' own logs (default: discarded).
	Logf func(format string, args ...any)
	Logs io.Writer
}

// Report is what a rehearsal found. Failures is empty when it passed.
type Report struct {
	Core, TenantStack Stack
	// NotCreated are resources of the rendered templates moto's
	// CloudFormation did not create.
	NotCreated []string
	Functions  []Function
	Routes     []RouteKey
	Mapping    Mapping
	Deliveries []Delivery
	Applied    []devstack.Applied
	DeadLetter []DeadLetter
	IAM        IAMVerdict
	// Notes say what moto reported differently from AWS and what covers it.
	Notes    []string
	Failures []string
	Took     time.Duration
}

// Err returns the failures joined, or nil.
func (r *Report) Err() error {
	if len(r.Failures) == 0 {
		return nil
	}
	return errors.New("rehearsal failed:\n  " + strings.Join(r.Failures, "\n  "))
}

func (r *Report) failf(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}
func (r *Report) notef(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// DeadLetter is a message found in the tenant's DLQ.
type DeadLetter struct {
	EventID, Reason string
}

// Run rehearses a deploy; see the package comment. It returns an error
// when the rehearsal could not run (an emulator, a stack create, a build);
// what the run found wrong is in the Report's Failures.
func Run(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	if o.StackName == "" {
		o.StackName = "hookpack"
	}
	if o.Tenant == "" {
		o.Tenant = "demo"
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.Root, "bin", "local")
	}
	if o.Settle == 0 {
		o.Settle = 2 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Logs == nil {
		o.Logs = io.Discard
	}
	rep := &Report{}
	var stop func()
	var err error
	if o.Endpoint, stop, err = emulator.Moto(ctx, o.Endpoint); err != nil {
		return nil, err
	}
	defer stop()
	cfg, err := emulator.AWSConfig(ctx, o.Endpoint, "")
	if err != nil {
		return nil, err
	}

	o.Logf("render template.yaml (SAM transform) and build the bootstraps")
	var declared Template
	var binaries map[string]string
	var renderErr, buildErr error
	var wg sync.WaitGroup
	wg.Go(func() { declared, renderErr = Render(ctx, o.Root, "template.yaml") })
	wg.Go(func() { binaries, buildErr = build(ctx, o.Root, o.BinDir) })
	wg.Wait()
	if err := errors.Join(renderErr, buildErr); err != nil {
		return nil, err
	}
	core := declared.Clone()
	if o.Mutate != nil {
		o.Mutate(core)
	}

	o.Logf("create core stack %s on moto's CloudFormation", o.StackName)
	cf := cloudformation.NewFromConfig(cfg)
	if err := uploadCode(ctx, queue.NewS3(cfg), core); err != nil {
		return nil, err
	}
	if rep.Core, err = createStack(ctx, cf, o.StackName, core); err != nil {
		return nil, err
	}
	rep.NotCreated = rep.Core.Missing(core)

	ft, err := devstack.LoadTenant(filepath.Join(o.Root, "events", "tenants.json"), o.Tenant)
	if err != nil {
		return nil, err
	}
	targetL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// The tenant's forwards go to one destination with a rate, so the
	// limiter's calls run under the worker's role too: every event (no
	// filter), RehearsalRate at most.
	outbound := tenant.Outbound{Destinations: []tenant.Destination{{
		Name: RehearsalDestination, URL: "http://" + targetL.Addr().String() + "/tenants/" + o.Tenant + "/events",
		Secrets: ft.Outbound.Secrets, Rate: RehearsalRate, Burst: RehearsalBurst,
	}}}
	target := devstack.NewTarget(map[string]tenant.Outbound{o.Tenant: outbound}, slog.New(slog.DiscardHandler))
	targetSrv := &http.Server{Handler: target, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = targetSrv.Serve(targetL) }()
	defer targetSrv.Close()

	o.Logf("onboard tenant %s with scripts/tenant/tenant.sh add", o.Tenant)
	dir, err := os.MkdirTemp("", "hookpack-rehearsal-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "inbound.json"), filepath.Join(dir, "outbound.json")
	if err := writeJSON(in, ft.Inbound); err != nil {
		return nil, err
	}
	if err := writeJSON(out, outbound); err != nil {
		return nil, err
	}
	if _, err := addTenant(ctx, o.Root, o.Endpoint, o.StackName, o.Tenant, in, out); err != nil {
		return nil, err
	}
	tenantTpl, err := Render(ctx, o.Root, "template-tenant.yaml")
	if err != nil {
		return nil, err
	}
	if rep.TenantStack, err = readStack(ctx, cf, o.StackName+"-tenant-"+o.Tenant); err != nil {
		return nil, err
	}
	rep.NotCreated = append(rep.NotCreated, rep.TenantStack.Missing(tenantTpl)...)

	o.Logf("read back functions, roles, routes and the event source mapping")
	if err := readBack(ctx, cfg, o, core, rep); err != nil {
		return nil, err
	}
	ingestFn, workerFn, err := roles(rep)
	if err != nil {
		return nil, err
	}
	checkConfig(rep, declared, ingestFn, workerFn)

	rec, err := capture.NewRecorder(o.Endpoint)
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	o.Logf("run the bootstraps: ingest behind the routes read back, worker under the mapping read back")
	if err := pipeline(ctx, o, cfg, rep, rec, binaries, ingestFn, workerFn, ft.Inbound, target); err != nil {
		return nil, err
	}

	o.Logf("pause destination %s, leave an event waiting in the queue for it", RehearsalDestination)
	if err := pauseAndWait(ctx, cfg, rep, o.Tenant, tenantTpl); err != nil {
		return nil, err
	}
	o.Logf("run the watch once, as its schedule does, on the dead letter the poison event left and the paused destination")
	if err := watchOnce(ctx, o, rep, rec, binaries); err != nil {
		return nil, err
	}

	o.Logf("evaluate %d recorded AWS requests against the roles the stack created (moto.iam.access_control)", len(rec.Calls()))
	if err := checkIAM(ctx, ssm.NewFromConfig(cfg), rep, rec.Calls(), declared, o); err != nil {
		return nil, err
	}
	rep.Took = time.Since(start)
	return rep, nil
}

// The destination the rehearsal's tenant forwards to, and its rate.
const (
	RehearsalDestination = "all"
	RehearsalRate        = "20/s"
	RehearsalBurst       = 5
)

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// build returns the bootstraps (package bootstrap: make build's flags, for
// this machine, once per process) by function logical id ("ingest" →
// "IngestFunction", the naming of the Makefile's build-%Function rule).
func build(ctx context.Context, root, binDir string) (map[string]string, error) {
	bins, err := bootstrap.ForHost(ctx, root, binDir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(bins))
	for name, bin := range bins {
		out[strings.ToUpper(name[:1])+name[1:]+"Function"] = bin
	}
	return out, nil
}

func readBack(ctx context.Context, cfg aws.Config, o Options, core Template, rep *Report) error {
	lc, ic := lambda.NewFromConfig(cfg), iam.NewFromConfig(cfg)
	for _, id := range sortedKeys(rep.Core.Resources) {
		if r := rep.Core.Resources[id]; r.Type == "AWS::Lambda::Function" {
			f, notes, err := readFunction(ctx, o.Endpoint, ic, id, r.Physical)
			if err != nil {
				return err
			}
			rep.Notes = append(rep.Notes, notes...)
			rep.Functions = append(rep.Functions, f)
		}
	}
	m, ok := rep.TenantStack.Resources["Mapping"]
	if !ok {
		return fmt.Errorf("tenant stack %s created no Mapping", rep.TenantStack.Name)
	}
	var err error
	if rep.Mapping, err = readMapping(ctx, lc, m.Physical); err != nil {
		return err
	}
	for id, r := range core.Resources() {
		if res, _ := r.(map[string]any); res["Type"] == "AWS::ApiGatewayV2::Api" {
			if rep.Routes, err = importRoutes(ctx, apigatewayv2.NewFromConfig(cfg), core, newResolver(core, rep.Core), id); err != nil {
				return err
			}
		}
	}
	if _, ok := rep.Core.Resources["HttpApi"]; !ok {
		rep.notef("moto's CloudFormation creates no AWS::ApiGatewayV2::Api: the routes are what moto's API Gateway import (ReimportApi) makes of the OpenAPI body SAM rendered, with the stack's function ARN in each integration")
	}
	return nil
}

// roles returns the function the routes integrate with and the one the
// mapping invokes.
func roles(rep *Report) (ingestFn, workerFn Function, err error) {
	for _, f := range rep.Functions {
		if f.ARN == rep.Mapping.FunctionARN || strings.HasSuffix(rep.Mapping.FunctionARN, ":function:"+f.Name) {
			workerFn = f
		}
		for _, rt := range rep.Routes {
			if strings.Contains(rt.IntegrationURI, f.ARN) {
				ingestFn = f
			}
		}
	}
	if ingestFn.Name == "" || workerFn.Name == "" {
		return ingestFn, workerFn, fmt.Errorf("no function behind the routes (%v) or the mapping (%s)", rep.Routes, rep.Mapping.FunctionARN)
	}
	return ingestFn, workerFn, nil
}

// checkConfig records what the read-back configuration says wrong and what
// moto reports differently from AWS.
func checkConfig(rep *Report, declared Template, ingestFn, workerFn Function) {
	for _, f := range rep.Functions {
		if v := f.Env["AWS_ENDPOINT_URL"]; v != "" {
			rep.failf("%s: AWS_ENDPOINT_URL is %q in the created function; it must be empty in AWS (the SDK's https endpoints, which the payload bucket's TLS-only policy requires)", f.LogicalID, v)
		}
	}
	if !slices.Contains(rep.Mapping.ResponseTypes, "ReportBatchItemFailures") {
		rep.failf("mapping %s: FunctionResponseTypes %v lack ReportBatchItemFailures, which the worker's partial batch responses need", rep.Mapping.UUID, rep.Mapping.ResponseTypes)
	}
	if rep.Mapping.BatchSize < 1 || rep.Mapping.BatchSize > 10 {
		rep.failf("mapping %s: BatchSize %d, a FIFO mapping takes 1-10", rep.Mapping.UUID, rep.Mapping.BatchSize)
	}
	if rep.Mapping.MaximumConcurrency < 2 {
		rep.failf("mapping %s: ScalingConfig.MaximumConcurrency %d, want at least 2", rep.Mapping.UUID, rep.Mapping.MaximumConcurrency)
	}
	for _, f := range []Function{ingestFn, workerFn} {
		res, _ := declared.Resources()[f.LogicalID].(map[string]any)
		props, _ := res["Properties"].(map[string]any)
		role, _ := props["Role"].(map[string]any)
		ga, _ := role["Fn::GetAtt"].([]any)
		if len(ga) == 0 {
			continue
		}
		rr, _ := declared.Resources()[fmt.Sprint(ga[0])].(map[string]any)
		rp, _ := rr["Properties"].(map[string]any)
		if arns, _ := rp["ManagedPolicyArns"].([]any); len(arns) > 0 && !slices.ContainsFunc(f.Policies, func(p Policy) bool { return strings.HasPrefix(p.Name, "arn:") }) {
			rep.notef("%s: moto's CloudFormation attaches none of the role's ManagedPolicyArns %v; they grant Lambda's own log delivery (logs:*), which the code never calls, so no recorded call depends on them", ga[0], arns)
		}
		if arch, _ := props["Architectures"].([]any); len(arch) > 0 {
			rep.notef("%s: the template says Architectures %v; moto keeps its default (x86_64). make build builds linux/arm64; the rehearsal runs the same build for this machine", f.LogicalID, arch)
		}
	}
}

// pipeline runs the bootstraps on what the stacks created and sends the
// deliveries through.
func pipeline(ctx context.Context, o Options, cfg aws.Config, rep *Report, rec *capture.Recorder, binaries map[string]string,
	ingestFn, workerFn Function, inbound tenant.Inbound, target *devstack.Target) error {
	routes := make([]string, 0, len(rep.Routes))
	for _, r := range rep.Routes {
		routes = append(routes, r.Key)
	}
	parsed, err := apigw.ParseRouteKeys(routes)
	if err != nil {
		return err
	}
	start := func(f Function) (*runtimeapi.Instance, error) {
		bin, ok := binaries[f.LogicalID]
		if !ok {
			return nil, fmt.Errorf("no functions/ directory builds %s", f.LogicalID)
		}
		endpoint, err := rec.Endpoint(f.LogicalID)
		if err != nil {
			return nil, err
		}
		return runtimeapi.Start(ctx, runtimeapi.Options{Binary: bin, Env: lambdaEnv(f, endpoint), Timeout: f.Timeout,
			FunctionName: f.Name, FunctionARN: f.ARN, Stdout: o.Logs, Stderr: o.Logs})
	}
	ingest, err := start(ingestFn)
	if err != nil {
		return err
	}
	defer ingest.Close()
	api, err := serve(apigw.Routes(parsed, func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		var resp events.APIGatewayV2HTTPResponse
		return resp, invokeJSON(ctx, ingest, ev, &resp)
	}, ingestFn.Timeout, slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	defer api.Close()

	// The mapping invokes the worker with its role: the pollers' own calls
	// (receive, delete) go through the worker's endpoint and are checked
	// against the worker's role, as Lambda's are.
	pollEndpoint, err := rec.Endpoint(workerFn.LogicalID)
	if err != nil {
		return err
	}
	queueURL := rep.TenantStack.Resources["Queue"].Physical
	pctx, stop := context.WithCancel(ctx)
	var pollers sync.WaitGroup
	defer func() { stop(); pollers.Wait() }()
	for range rep.Mapping.MaximumConcurrency {
		w, err := start(workerFn)
		if err != nil {
			return err
		}
		defer w.Close()
		p := &esm.Poller{Client: sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(pollEndpoint) }), QueueURL: queueURL, Region: Region, Timeout: workerFn.Timeout,
			BatchSize: rep.Mapping.BatchSize, Logger: slog.New(slog.DiscardHandler),
			Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				var resp events.SQSEventResponse
				return resp, invokeJSON(ctx, w, ev, &resp)
			}}
		pollers.Go(func() { p.Run(pctx) })
	}

	plan, err := deliveries(o.Root, o.Tenant, inbound, api.URL)
	if err != nil {
		return err
	}
	o.Logf("send %d signed deliveries (every provider's samples, each POST twice)", len(plan))
	var accepted []accepted
	rep.Deliveries, accepted = send(ctx, rep, plan)
	o.Logf("wait for every effect at the target and the poison event in the DLQ")
	settle(ctx, o, sqs.NewFromConfig(cfg), rep, accepted, target, queueURL, rep.TenantStack.Resources["DeadLetterQueue"].Physical)
	return nil
}

// watchFunction is the logical id of the scheduled alerting function.
const watchFunction = "WatchFunction"

// watchOnce invokes the watch as its schedule does (events/watch/
// scheduled.json), with the environment and the recording endpoint of the
// function the stack created, after the pipeline left the poison event in
// the tenant's DLQ: it must publish a notification for that tenant.
func watchOnce(ctx context.Context, o Options, rep *Report, rec *capture.Recorder, binaries map[string]string) error {
	i := slices.IndexFunc(rep.Functions, func(f Function) bool { return f.LogicalID == watchFunction })
	if i < 0 {
		rep.failf("the core stack created no %s", watchFunction)
		return nil
	}
	f := rep.Functions[i]
	endpoint, err := rec.Endpoint(f.LogicalID)
	if err != nil {
		return err
	}
	ev, err := os.ReadFile(filepath.Join(o.Root, "events", "watch", "scheduled.json"))
	if err != nil {
		return err
	}
	res, err := runtimeapi.Invoke(ctx, runtimeapi.Options{Binary: binaries[f.LogicalID], Env: lambdaEnv(f, endpoint), Event: ev, Timeout: f.Timeout,
		FunctionName: f.Name, FunctionARN: f.ARN, Stdout: o.Logs, Stderr: o.Logs})
	if err != nil {
		return fmt.Errorf("invoke %s: %w", f.LogicalID, err)
	}
	if res.Error != nil {
		rep.failf("%s: the scheduled run failed: %v", f.LogicalID, res.Error)
		return nil
	}
	if !slices.ContainsFunc(rec.Calls(), func(c capture.Call) bool { return c.Function == f.LogicalID && c.Action == "sns:Publish" }) {
		rep.failf("%s: no notification published for tenant %s, whose DLQ holds the poison event", f.LogicalID, o.Tenant)
	}
	if !slices.ContainsFunc(rec.Calls(), func(c capture.Call) bool {
		return c.Function == f.LogicalID && c.Action == "dynamodb:GetItem" && strings.Contains(c.Resource, "LedgerTable")
	}) {
		rep.failf("%s: did not read the paused destination of tenant %s, whose queue holds a message", f.LogicalID, o.Tenant)
	}
	return nil
}

// pauseAndWait pauses the tenant's destination as tenant.sh pause does
// (package destination, on the core stack's ledger table) and leaves one
// message in the tenant's queue, as an event waiting for it: the watch then
// reads the queue's threshold tag and the tenant's pauses, and alerts the
// pause (watchOnce). The pollers have stopped, so nothing takes it.
func pauseAndWait(ctx context.Context, cfg aws.Config, rep *Report, tenantID string, tenantTpl Template) error {
	ledgerTable := rep.Core.Resources["LedgerTable"].Physical
	if ledgerTable == "" {
		rep.failf("the core stack created no LedgerTable")
		return nil
	}
	// moto's CloudFormation stores the queue's tag from a Number parameter
	// as a JSON number, which the SDK refuses to read (AWS stores the
	// string): tag it again as AWS would have, from the template's default.
	params, _ := tenantTpl["Parameters"].(map[string]any)
	threshold, _ := params["OldestMessageAlarmSeconds"].(map[string]any)
	queueURL := rep.TenantStack.Resources["Queue"].Physical
	if _, err := sqs.NewFromConfig(cfg).TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(queueURL),
		Tags: map[string]string{watch.ThresholdTag: fmt.Sprint(threshold["Default"])}}); err != nil {
		return fmt.Errorf("tag %s: %w", queueURL, err)
	}
	rep.notef("TenantStack Queue: moto's CloudFormation stores the tag %s as a JSON number, which the SDK cannot read; the rehearsal tags it again with the string AWS stores (%v)", watch.ThresholdTag, threshold["Default"])
	if _, err := destination.NewDynamoDB(dynamodb.NewFromConfig(cfg), ledgerTable).Pause(ctx, tenantID, RehearsalDestination, "rehearsal: maintenance", time.Now()); err != nil {
		return fmt.Errorf("pause %s/%s: %w", tenantID, RehearsalDestination, err)
	}
	_, err := sqs.NewFromConfig(cfg).SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(queueURL), MessageBody: aws.String(`{"waiting":"for the paused destination"}`),
		MessageGroupId: aws.String("rehearsal-paused"), MessageDeduplicationId: aws.String("rehearsal-paused"),
	})
	if err != nil {
		return fmt.Errorf("leave a message waiting: %w", err)
	}
	return nil
}

// lambdaEnv is the created function's environment as Lambda gives it, with
// the one variable the template declares for local endpoints pointed at
// the function's recording endpoint, and the role's credentials (fake).
func lambdaEnv(f Function, endpoint string) []string {
	env := []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_DEFAULT_REGION=" + Region}
	for _, k := range sortedKeys(f.Env) {
		v := f.Env[k]
		if k == "AWS_ENDPOINT_URL" {
			v = endpoint
		}
		env = append(env, k+"="+v)
	}
	if _, ok := f.Env["AWS_ENDPOINT_URL"]; !ok {
		env = append(env, "AWS_ENDPOINT_URL="+endpoint)
	}
	return env
}

func invokeJSON(ctx context.Context, in *runtimeapi.Instance, ev, resp any) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	res, err := in.Invoke(ctx, b)
	if err != nil {
		return err
	}
	if res.Error != nil {
		return res.Error
	}
	return json.Unmarshal(res.Payload, resp)
}

type server struct {
	URL string
	srv *http.Server
}

// serve serves h on a free loopback port.
func serve(h http.Handler) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &server{URL: "http://" + l.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

func (s *server) Close() { _ = s.srv.Close() }

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
