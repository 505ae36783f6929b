// Command inspect shows where a tenant's event is, read-only: its
// idempotency claim, its queue and dead-letter queue, its effects in the
// ledger (each destination's effect too), its offloaded body, and its history from the functions' logs; or, with
// -summary, the tenant's queue depth, in-flight and dead-letter counts, oldest ages, and per destination its rate,
// its limiter, its dead letters, when the backlog drains and, with -scan, its events
// delivered, retrying (its failing conversations) and dead. See package inspect.
//
//	go run ./scripts/inspect -local -tenant demo devstack-1         # make run
//	go run ./scripts/inspect -local -tenant demo -summary -scan     # make inspect TENANT=demo
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

	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/scripts/internal/stack"
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
	scan := fs.Bool("scan", false, "Scan the ledger for the event's effects and to resolve a webhook-id or Idempotency-Key, or with -summary for each destination's delivered, retrying and dead counts (reads the whole table)")
	asJSON := fs.Bool("json", false, "print JSON")
	st := stack.Define(fs)
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

	cfg, d, metrics, err := st.Deployment(ctx, *tenantID)
	if err != nil {
		return fail(stderr, err)
	}
	in := inspect.NewAWS(cfg, d, metrics)
	if *summary {
		s, err := in.SummarizeWith(ctx, *tenantID, inspect.SummaryOptions{Scan: *scan})
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
