// Package devstack runs the whole pack on one machine with no AWS account:
// it starts moto server, provisions what template.yaml would (idempotency and
// ledger tables, each tenant's FIFO queue and FIFO DLQ, tenant credentials as
// SSM SecureString parameters loaded from the local tenants file), serves the
// real ingest handler behind a local stand-in for API Gateway's HTTP API,
// polls every tenant queue into the real worker handler the way Lambda's
// event source mapping does, and runs a target service that receives the
// forward effect's deliveries.
package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/queue"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/ingest"
	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/local/apigw"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

// Options configure a local stack.
type Options struct {
	// Name plays the role of the core stack name: it prefixes queues
	// (QueueName), the tables and the parameter path. Default DefaultName.
	Name        string
	TenantsFile string
	// Addr is where the HTTP API listens (default 127.0.0.1:3000).
	Addr string
	// TargetAddr is where the local target service listens (default
	// DefaultTargetAddr). The tenants file's targetUrls on
	// DefaultTargetAddr follow it (Start).
	TargetAddr string
	// Endpoint, when set, is an already running moto server to use.
	Endpoint string
	// DynamoDBEndpoint, when set, serves DynamoDB instead of moto: AWS's
	// DynamoDB Local, whose conditional writes are atomic under concurrency
	// as in AWS (moto's are not). DynamoDBLocalDir starts one from an
	// installed DynamoDB Local (scripts/install-dynamodb-local.sh).
	DynamoDBEndpoint string
	DynamoDBLocalDir string
	// DynamoDBLocalPort is where a started DynamoDB Local listens (0 picks
	// a free port; `make run` uses 8000 so events/env.json can point at it).
	DynamoDBLocalPort int
	// ManualWorker leaves the tenant queues alone: Serve starts no pollers
	// and the caller drives the worker (make cost measures it that way).
	ManualWorker bool
	// MotoPort is where a started moto listens (0 picks a free port;
	// `make run` uses 4566 so events/env.json can point at it).
	MotoPort int
	// Queue sets the tenant queues' properties (DefaultQueue when zero).
	Queue provision.PairOptions
	// Host is the address a started moto binds (default 127.0.0.1; DynamoDB
	// Local always listens on every interface); 0.0.0.0 lets a container
	// (sam local invoke on Docker Desktop) reach it through
	// host.docker.internal.
	Host   string
	Logger *slog.Logger
	// LogFile, when set, also receives the functions' JSON log lines, as
	// CloudWatch would (truncated at Start: the emulators' stores live as
	// long as the stack). `make inspect` searches it for the ingest's line
	// of an event id, as scripts/inspect searches a deployed stack's ingest
	// log group.
	LogFile string
}

// DefaultQueue are the tenant queues' properties in `make run`.
var DefaultQueue = provision.PairOptions{VisibilityTimeout: 180, MaxReceiveCount: worker.MinMaxReceiveCount(LocalMaxAttempts)}

// DefaultName is `make run`'s stack name (events/env.json names its tables
// and queues).
const DefaultName = "hookpack-local"

// QueueName is the name of a tenant's queue without ".fifo", by the core
// template's naming: "<stack>_<tenant>" (its DLQ adds "-dlq"). Stack names
// and tenant ids cannot contain "_", so one stack's prefix never matches
// another's queues.
func QueueName(stack, tenant string) string { return stack + "_" + tenant }

// Stack is a provisioned local deployment.
type Stack struct {
	Options
	AWS     aws.Config
	Tenants *tenant.File
	Deployment
	Target   *Target
	moto     *emulator.Process
	ddbLocal *emulator.Process
	logFile  *os.File
	listener net.Listener
	targetL  net.Listener
}

// Route is the webhook route template.yaml declares.
var Route = apigw.Route{Methods: []string{http.MethodGet, http.MethodPost}, Path: "/webhooks/{tenant}/{provider}"}

// Start claims the listen addresses (failing fast and clearly when one is
// taken), starts moto unless an endpoint is given, and provisions every
// tenant in the tenants file, with each targetUrl on DefaultTargetAddr
// moved to where the target service listens (logged), so a moved
// TARGET_ADDR never leaves a tenant forwarding to the old address. Other
// targetUrls (a tenant's own service) are provisioned as written.
func Start(ctx context.Context, o Options) (*Stack, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:3000"
	}
	if o.TargetAddr == "" {
		o.TargetAddr = DefaultTargetAddr
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var logFile *os.File
	if o.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(o.LogFile), 0o755); err != nil {
			return nil, fmt.Errorf("log file: %w", err)
		}
		f, err := os.Create(o.LogFile)
		if err != nil {
			return nil, fmt.Errorf("log file: %w", err)
		}
		logFile = f
		o.Logger = slog.New(slog.NewMultiHandler(o.Logger.Handler(), slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})))
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	s := &Stack{Options: o, logFile: logFile}
	f, err := tenant.LoadFile(o.TenantsFile, provider.Registry())
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Tenants = f
	if s.listener, err = net.Listen("tcp", o.Addr); err != nil {
		return nil, fmt.Errorf("listen on %s: %w (is `make run` already running? set ADDR to use another address)", o.Addr, err)
	}
	if s.targetL, err = net.Listen("tcp", o.TargetAddr); err != nil {
		s.Close()
		return nil, fmt.Errorf("target service: listen on %s: %w (is `make run` already running? set TARGET_ADDR to use another address)", o.TargetAddr, err)
	}
	for _, m := range retarget(s.Tenants, DialAddr(s.targetL.Addr())) {
		attrs := []any{slog.String("tenantId", m.tenant)}
		if m.dest != "" {
			attrs = append(attrs, slog.String("destination", m.dest))
		}
		o.Logger.Info("target URL follows TARGET_ADDR", append(attrs, slog.String("url", m.to), slog.String("from", m.from))...)
	}
	if o.Endpoint == "" {
		if s.moto, err = emulator.StartMotoOn(ctx, o.Host, o.MotoPort); err != nil {
			s.Close()
			return nil, err
		}
		s.Endpoint = s.moto.Endpoint
	}
	if s.DynamoDBEndpoint == "" && s.DynamoDBLocalDir != "" {
		if s.ddbLocal, err = emulator.StartDynamoDBLocal(ctx, s.DynamoDBLocalDir, s.DynamoDBLocalPort); err != nil {
			s.Close()
			return nil, err
		}
		s.DynamoDBEndpoint = s.ddbLocal.Endpoint
	}
	if s.AWS, err = emulator.AWSConfig(ctx, s.Endpoint, s.DynamoDBEndpoint); err != nil {
		s.Close()
		return nil, err
	}
	if s.Deployment, err = Provision(ctx, s.AWS, s.Name, s.Tenants, s.Queue); err != nil {
		s.Close()
		return nil, err
	}
	outbound := map[string]tenant.Outbound{}
	for id, t := range s.Tenants.Tenants {
		outbound[id] = t.Outbound
	}
	s.Target = NewTarget(outbound, s.Logger)
	return s, nil
}

// Deployment is what Provision creates: what template.yaml deploys for a
// stack, and the functions' settings pointing at it.
type Deployment struct {
	Queues   map[string]provision.Pair
	Settings ingest.Settings
	Worker   worker.Settings
}

// Provision creates on cfg's endpoints what template.yaml deploys in AWS
// for stack name: the idempotency and ledger tables, the payload bucket, each tenant's FIFO
// queue and DLQ (with q, DefaultQueue when zero) and its credentials in
// SSM.
func Provision(ctx context.Context, cfg aws.Config, name string, tenants *tenant.File, q provision.PairOptions) (Deployment, error) {
	if q == (provision.PairOptions{}) {
		q = DefaultQueue
	}
	d := Deployment{Queues: map[string]provision.Pair{}}
	stores := Stores(name)
	table, bucket := stores.IdempotencyTable, stores.PayloadBucket
	ddb := dynamodb.NewFromConfig(cfg)
	if err := provision.Idempotency(ctx, ddb, table); err != nil {
		return d, err
	}
	if err := provision.Ledger(ctx, ddb, stores.LedgerTable); err != nil {
		return d, err
	}
	if err := provision.Bucket(ctx, queue.NewS3(cfg), bucket); err != nil {
		return d, err
	}
	sq := sqs.NewFromConfig(cfg)
	creds := tenant.NewSSM(ssm.NewFromConfig(cfg), "/"+name)
	for _, id := range tenants.IDs() {
		pair, err := provision.QueuePair(ctx, sq, QueueName(name, id), q)
		if err != nil {
			return d, err
		}
		d.Queues[id] = pair
		t := tenants.Tenants[id]
		if err := creds.Put(ctx, id, t.Inbound, t.Outbound, "", provider.Registry()); err != nil {
			return d, err
		}
	}
	var tmpl string
	for id, p := range d.Queues {
		tmpl = strings.TrimSuffix(p.URL, QueueName(name, id)+".fifo") + QueueName(name, "{tenant}") + ".fifo"
		break
	}
	d.Settings = ingest.Settings{
		IdempotencyTable: table,
		ParameterPrefix:  "/" + name,
		QueueURLTemplate: tmpl,
		PayloadBucket:    bucket,
		TenantCacheTTL:   5 * time.Second, // local edits to credentials show up fast
		// and so does a tenant added to the emulated Parameter Store.
		TenantListRefresh: 5 * time.Second,
	}
	d.Worker = worker.Settings{
		LedgerTable:      stores.LedgerTable,
		ParameterPrefix:  "/" + name,
		QueueURLTemplate: tmpl,
		PayloadBucket:    bucket,
		TenantCacheTTL:   5 * time.Second,
		RetryBase:        time.Second, // quick local retries; AWS defaults are longer
		RetryMax:         10 * time.Second,
		MaxAttempts:      LocalMaxAttempts,
		// A resumed destination drains within seconds (make pause / make
		// resume, the demo's pause scenario); AWS polls from a minute.
		PausePoll:           LocalPausePoll,
		DestinationCacheTTL: LocalDestinationCacheTTL,
	}
	return d, nil
}

// Stores names the tables and the bucket Provision creates for stack name
// (the queue URL template is left empty: see Inspected).
func Stores(name string) inspect.Deployment {
	return inspect.Deployment{
		IdempotencyTable: name + "-idempotency",
		LedgerTable:      name + "-ledger",
		PayloadBucket:    provision.BucketName(name),
		ParameterPrefix:  "/" + name,
		MaxAttempts:      LocalMaxAttempts,
	}
}

// Inspected returns the local stack name on cfg's endpoints as package
// inspect reads it: Stores, and the tenant queues' URL template taken from
// the emulator's URL of tenantID's queue. It returns an error wrapping
// inspect.ErrUnknownTenant when that queue does not exist.
func Inspected(ctx context.Context, cfg aws.Config, name, tenantID string) (inspect.Deployment, error) {
	d := Stores(name)
	q := QueueName(name, tenantID)
	out, err := sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q + ".fifo")})
	var missing *sqstypes.QueueDoesNotExist
	if errors.As(err, &missing) {
		return d, fmt.Errorf("%w %s: no queue %s.fifo (is `make run` running with this tenant?)", inspect.ErrUnknownTenant, tenantID, q)
	}
	if err != nil {
		return d, fmt.Errorf("queue of %s on %s: %w (is `make run` running?)", tenantID, name, err)
	}
	d.QueueURLTemplate = strings.TrimSuffix(aws.ToString(out.QueueUrl), q+".fifo") + QueueName(name, "{tenant}") + ".fifo"
	return d, nil
}

// ServeBackground runs Serve until the returned stop is called; stop waits
// for it to shut down.
func (s *Stack) ServeBackground(ctx context.Context) (stop func()) {
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() { defer close(served); _ = s.Serve(sctx) }()
	return func() { cancel(); <-served }
}

// URL is the base URL of the local HTTP API.
func (s *Stack) URL() string { return "http://" + s.listener.Addr().String() }

// LocalMaxAttempts is the worker's MaxAttempts under make run: with local
// backoffs of 1-10 s, a transient failure is given about a minute before it
// is dead-lettered with its reason. The queues' maxReceiveCount is
// worker.MinMaxReceiveCount of it, so SQS's redrive never fires first.
const LocalMaxAttempts = 8

// LocalPausePoll and LocalDestinationCacheTTL are make run's
// worker.Settings PausePoll and DestinationCacheTTL: while a pause is less
// than a minute old its messages look again every few seconds, and a
// resume is seen within a couple, so a short pause's backlog drains within
// LocalResumeDrain of its resume (deployed, and after a minute's pause:
// destination.Poll from a minute, plus the 10 s cache).
const (
	LocalPausePoll           = 5 * time.Second
	LocalDestinationCacheTTL = 2 * time.Second
	LocalResumeDrain         = LocalPausePoll + LocalDestinationCacheTTL
)

// WorkerTimeout is the worker function's timeout, as in template.yaml.
const WorkerTimeout = 30 * time.Second

// TenantConcurrency is the pollers of each tenant queue: the deployed
// mapping's MaximumConcurrency (template-tenant.yaml's TenantMaxConcurrency
// default), as many invocations as Lambda runs at most on the queue.
const TenantConcurrency = 5

// Serve runs the whole pipeline until ctx is done: the HTTP API serving the
// real ingest handler, TenantConcurrency pollers per tenant queue invoking
// the real worker handler like the event source mapping, and the local
// target service. It then shuts everything down gracefully.
func (s *Stack) Serve(ctx context.Context) error {
	h := ingest.NewAWS(s.AWS, s.Settings, s.Logger)
	api := &http.Server{
		Handler:           apigw.Server(Route, h.Handle, 10*time.Second, s.Logger),
		ReadHeaderTimeout: 5 * time.Second,
	}
	// The target's requests end with ctx: a held answer (a hang rule) never
	// holds up the shutdown.
	target := &http.Server{Handler: s.Target, ReadHeaderTimeout: 5 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	w := worker.NewAWS(s.AWS, s.Worker, s.Logger)
	sq := sqs.NewFromConfig(s.AWS)
	pctx, stopPollers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, id := range s.Tenants.IDs() {
		if s.ManualWorker {
			break
		}
		p := &esm.Poller{Client: sq, QueueURL: s.Queues[id].URL, Region: s.AWS.Region, Handler: w.Handle, Timeout: WorkerTimeout, Concurrency: TenantConcurrency, Logger: s.Logger}
		wg.Go(func() { p.Run(pctx) })
	}
	errc := make(chan error, 2)
	go func() { errc <- api.Serve(s.listener) }()
	go func() { errc <- target.Serve(s.targetL) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	stopPollers()
	wg.Wait()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range []*http.Server{api, target} {
		if serr := srv.Shutdown(sctx); serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// TargetURL is the base URL of the local target service.
func (s *Stack) TargetURL() string { return "http://" + s.targetL.Addr().String() }

// Close stops the emulator and releases the address.
func (s *Stack) Close() {
	if s.listener != nil {
		_ = s.listener.Close()
	}
	if s.targetL != nil {
		_ = s.targetL.Close()
	}
	s.moto.Stop()
	s.ddbLocal.Stop()
	if s.logFile != nil {
		_ = s.logFile.Close()
	}
}

// Banner describes the running stack for a newcomer.
func (s *Stack) Banner() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nhookpack is running locally (moto at %s", s.Endpoint)
	if s.DynamoDBEndpoint != "" {
		fmt.Fprintf(&b, ", DynamoDB Local at %s", s.DynamoDBEndpoint)
	}
	b.WriteString(")\n\n")
	fmt.Fprintf(&b, "Tenants file: %s\n\nWebhook URLs:\n", s.TenantsFile)
	for _, id := range s.Tenants.IDs() {
		for _, p := range slices.Sorted(maps.Keys(s.Tenants.Tenants[id].Providers)) {
			fmt.Fprintf(&b, "  %s/webhooks/%s/%s\n", s.URL(), id, p)
		}
	}
	fmt.Fprintf(&b, "\nQueues (inspect with: aws --endpoint-url %s sqs receive-message --queue-url <url>):\n", s.Endpoint)
	for _, id := range s.Tenants.IDs() {
		fmt.Fprintf(&b, "  %s\n", s.Queues[id].URL)
	}
	fmt.Fprintf(&b, "\nTarget service (receives forwarded events): %s  (GET /applied, GET /stats)\n", s.TargetURL())
	fmt.Fprintf(&b, "  make it refuse, hang or rate-limit: curl -X POST '%s/control?event=<eventId>&status=400' (docs/development.md)\n", s.TargetURL())
	b.WriteString("\nWhere is an event? make inspect TENANT=<tenant> EVENT=<the eventId of its ingest line, or any id its sender shows>\n")
	if s.LogFile != "" {
		fmt.Fprintf(&b, "(the functions' JSON lines, which make inspect searches: %s)\n", s.LogFile)
	}
	b.WriteString("\nStop with Ctrl-C.\n")
	return b.String()
}

// DefaultTargetAddr is the target service address the repository's tenants
// file points its targetUrl values at.
const DefaultTargetAddr = "127.0.0.1:3001"

// move is one target URL retarget changed: a tenant's targetUrl, or the url
// of its destination dest.
type move struct{ tenant, dest, from, to string }

// retarget points every targetUrl and destination url of f on
// DefaultTargetAddr (or its port on another loopback name: localhost,
// [::1]) at addr instead, and returns what it changed, by tenant id.
func retarget(f *tenant.File, addr string) []move {
	_, defPort, _ := net.SplitHostPort(DefaultTargetAddr)
	follow := func(raw string) (string, bool) {
		u, err := url.Parse(raw)
		if raw == "" || err != nil || u.Port() != defPort || !slices.Contains([]string{"127.0.0.1", "localhost", "::1"}, u.Hostname()) || u.Host == addr {
			return raw, false
		}
		u.Host = addr
		return u.String(), true
	}
	var moved []move
	for _, id := range f.IDs() {
		t := f.Tenants[id]
		if to, ok := follow(t.Outbound.TargetURL); ok {
			moved = append(moved, move{id, "", t.Outbound.TargetURL, to})
			t.Outbound.TargetURL = to
		}
		ds := slices.Clone(t.Outbound.Destinations)
		for i, d := range ds {
			if to, ok := follow(d.URL); ok {
				moved = append(moved, move{id, d.Name, d.URL, to})
				ds[i].URL = to
			}
		}
		t.Outbound.Destinations = ds
		f.Tenants[id] = t
	}
	return moved
}

// DialAddr is where a client reaches a listener on a: a itself, or the
// loopback address on its port when it listens on every interface.
func DialAddr(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port))
	}
	return a.String()
}

// LoadTenant reads the tenants file at path (tenant.LoadFile, against the
// pack's providers) and returns tenant id's entry; a file without it is an
// error.
func LoadTenant(path, id string) (tenant.FileTenant, error) {
	f, err := tenant.LoadFile(path, provider.Registry())
	if err != nil {
		return tenant.FileTenant{}, err
	}
	t, ok := f.Tenants[id]
	if !ok {
		return tenant.FileTenant{}, fmt.Errorf("tenants file %s has no tenant %q", path, id)
	}
	return t, nil
}

// RetargetTenantsFile copies a tenants file into dir with every targetUrl
// moved from DefaultTargetAddr to addr: a stack started on the copy
// forwards to a service of the caller's (a test's receiver) instead of its
// own target service.
func RetargetTenantsFile(src, dir, addr string) (string, error) {
	raw, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("read tenants file: %w", err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	out := bytes.ReplaceAll(raw, []byte("//"+DefaultTargetAddr+"/"), []byte("//"+addr+"/"))
	if err := os.WriteFile(dst, out, 0o600); err != nil {
		return "", fmt.Errorf("write tenants file: %w", err)
	}
	return dst, nil
}
