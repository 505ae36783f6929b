// Command inspect shows where a tenant's event is, read-only: its
// idempotency claim, its queue and dead-letter queue, its effects in the
// ledger (each destination's effect too), its offloaded body, and its history from the functions' logs; or, with
// -summary, the tenant's queue depth, in-flight and dead-letter counts, oldest ages, and per destination its rate,
// its limiter and when the backlog drains. See package inspect.
//
//	go run ./scripts/inspect -local -tenant demo devstack-1         # make run
//	go run ./scripts/inspect -local -tenant demo -summary
//	go run ./scripts/inspect -stack hookpack -tenant acme evt_123   # a deployed core stack
//	go run ./scripts/inspect -tenant acme -provider stripe -effects mark-paid evt_123
//	go run ./scripts/inspect -tenant acme -scan msg_3f2a…           # a webhook-id or Idempotency-Key
//
// The event is any id an operator holds: the id its sender shows (Stripe's
// evt_…, GitHub's X-GitHub-Delivery, Shopify's event id,
// Twilio's MessageSid, …) or the eventId of the ingest's answer, found
// through the ingest's log lines (Logs Insights on the ingest log group
// deployed, `make run`'s log file locally) and tried as a key with every
// provider (-provider narrows); an idempotency key "acme#stripe#evt_123";
// or a one-way hash the receiver saw: a forward's webhook-id or an effect's
// Idempotency-Key, matched against the tenant's dead letters and, with
// -scan, its ledger records (a Scan of the whole ledger table). Several
// matches are all shown. Exit status (inspect.ExitStatus, as
// scripts/replay): 0 found, 1 a call failed, 2 bad usage, a malformed
// tenant id, event key, provider or effect name (named in the message), an
// unknown tenant or a stack that is not a core stack, 3 no such event.
// `go run` exits 1 whenever the program fails: build it to branch on its
// status (make inspect does).
//
// Deployed: names come from the core stack's outputs (DescribeStacks),
// credentials and region from the usual AWS environment. -local reads
// `make run`'s emulators (MOTO_PORT, DYNAMODB_PORT as make run uses them).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tenantID := fs.String("tenant", "", "tenant id (required)")
	summary := fs.Bool("summary", false, "the tenant's summary instead of one event")
	providerName := fs.String("provider", "", "try a provider event id with this provider only")
	effects := fs.String("effects", "", "comma-separated custom effect names to read besides the forward")
	scan := fs.Bool("scan", false, "Scan the ledger for the event's effects and to resolve a webhook-id or Idempotency-Key (reads the whole table)")
	asJSON := fs.Bool("json", false, "print JSON")
	stack := fs.String("stack", devstack.Getenv("STACK_NAME", "hookpack"), "deployed core stack (env STACK_NAME)")
	local := fs.Bool("local", false, "read `make run`'s emulators instead of a deployed stack")
	name := fs.String("name", devstack.DefaultName, "-local: the local stack's name")
	endpoint := fs.String("endpoint", fmt.Sprintf("http://127.0.0.1:%d", devstack.GetenvInt("MOTO_PORT", 4566)), "-local: moto's endpoint (env MOTO_PORT)")
	logFile := fs.String("log-file", devstack.Getenv("LOG_FILE", devstack.DefaultLogFile), "-local: the functions' log `make run` writes, searched for an event id (env LOG_FILE)")
	since := fs.Duration("since", 14*24*time.Hour, "deployed: how far back Logs Insights searches the ingest log group for an event id and the worker log group for its attempts")
	ddbEndpoint := fs.String("dynamodb-endpoint", fmt.Sprintf("http://127.0.0.1:%d", devstack.GetenvInt("DYNAMODB_PORT", 8000)), "-local: DynamoDB Local's endpoint (env DYNAMODB_PORT; empty: moto's)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: inspect [-local | -stack NAME] -tenant ID (EVENT | -summary)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *tenantID == "" || *summary != (fs.NArg() == 0) || fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	q := inspect.Query{Tenant: *tenantID, Event: fs.Arg(0), Provider: *providerName, Scan: *scan}
	if *effects != "" {
		q.Effects = strings.Split(*effects, ",")
	}
	// Malformed input is refused before any call: a tenant id that names
	// no queue would otherwise read as an unknown tenant.
	check := q.Check(inspect.Providers())
	if *summary {
		check = inspect.CheckTenant(*tenantID)
	}
	if check != nil {
		return fail(stderr, check)
	}

	in, err := inspector(ctx, *local, *stack, *name, *endpoint, *ddbEndpoint, *logFile, *since, *tenantID)
	if err != nil {
		return fail(stderr, err)
	}
	if *summary {
		s, err := in.Summarize(ctx, *tenantID)
		if err != nil {
			return fail(stderr, err)
		}
		return write(stdout, stderr, *asJSON, s, func() error { return inspect.WriteSummary(stdout, s) })
	}
	journeys, err := in.Inspect(ctx, q)
	if err != nil {
		return fail(stderr, err)
	}
	for i, j := range journeys {
		if i > 0 && !*asJSON {
			fmt.Fprintln(stdout)
		}
		if code := write(stdout, stderr, *asJSON, j, func() error { return inspect.WriteJourney(stdout, j) }); code != 0 {
			return code
		}
	}
	return 0
}

// inspector wires an inspector to make run's emulators or a deployed stack.
func inspector(ctx context.Context, local bool, stack, name, endpoint, ddbEndpoint, logFile string, since time.Duration, tenantID string) (*inspect.Inspector, error) {
	if local {
		cfg, err := emulator.AWSConfig(ctx, endpoint, ddbEndpoint)
		if err != nil {
			return nil, err
		}
		d, err := devstack.Inspected(ctx, cfg, name, tenantID)
		if err != nil {
			return nil, err
		}
		d.IngestLogFile = logFile
		d.ReplayCommand = "make replay TENANT={tenant} CONVERSATION={conversation} ACTION=redrive" + makeVars(endpoint)
		return inspect.NewAWS(cfg, d, false), nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	d, err := inspect.FromStack(ctx, cloudformation.NewFromConfig(cfg), stack)
	if err != nil {
		return nil, err
	}
	d.IngestLogSince = since
	d.ReplayCommand = "go run ./scripts/replay -stack " + stack + " -tenant {tenant} -conversation {conversation} redrive"
	return inspect.NewAWS(cfg, d, aws.ToString(cfg.BaseEndpoint) == ""), nil
}

// makeVars is what make replay must be told of moto's endpoint beside
// make run's default, so the printed command runs as printed.
func makeVars(endpoint string) string {
	if port := strings.TrimPrefix(endpoint, "http://127.0.0.1:"); port != endpoint && port != "4566" {
		return " MOTO_PORT=" + port
	}
	return ""
}

// fail prints err and returns its exit status (inspect.ExitStatus).
func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "inspect:", err)
	return inspect.ExitStatus(err)
}

func write(stdout, stderr io.Writer, asJSON bool, v any, text func() error) int {
	var err error
	if asJSON {
		err = json.NewEncoder(stdout).Encode(v)
	} else {
		err = text()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "inspect:", err)
		return 1
	}
	return 0
}
