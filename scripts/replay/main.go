// Command replay lists a tenant's dead-lettered events with their reasons
// and moves them back to the tenant's queue, preserving each
// conversation's order. A redrive moves only what was dead-lettered before
// it started, each message and event once, and ends; replaying an event
// whose effects already completed is a no-op (the worker's effect ledger
// skips them). See package replay.
//
//	go run ./scripts/replay -local -tenant demo list                     # make run (make replay TENANT=demo)
//	go run ./scripts/replay -local -tenant demo -event 4f2c1a60-0001 -dry-run redrive
//	go run ./scripts/replay -stack hookpack -tenant acme -conversation cus_42 redrive   # a deployed core stack
//	go run ./scripts/replay -queue-url https://sqs…/hookpack_acme.fifo -type invoice.paid redrive
//
// The tenant's queue comes from -queue-url; or from -queue-url-template
// (default $QUEUE_URL_TEMPLATE, "…/<stack>_{tenant}.fifo") and -tenant; or,
// deployed, from the core stack's QueueUrlPattern output (-stack, default
// $STACK_NAME or hookpack; its PayloadBucketName too); or, with -local, from
// `make run`'s emulators (moto at -endpoint, fake credentials, its region).
// The DLQ is "<name>-dlq.fifo" next to it. Deployed, credentials and region
// come from the usual AWS environment.
//
// -event takes any id scripts/inspect takes, checked and (with -local or a
// stack) looked up as inspect does it. A run that selects no dead letter
// says why: per event, "not dead-lettered: DONE (…)", "not in the DLQ
// (…)" or "no such event (…)".
//
// Exit status (inspect.ExitStatus, as scripts/inspect): 0 done, 1 an AWS
// call failed (what moved stays moved), 2 bad usage: a missing, empty or
// malformed argument, an unknown tenant, a stack that is not a core stack;
// 3 no dead letter selected. `go run` exits 1 whenever the program fails:
// build it to branch on its status (make replay does).
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
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks bad input: exit status 2.
var errUsage = errors.New("usage")

// target is where a run reads and sends.
type target struct {
	cfg           aws.Config
	source, dlq   string
	payloadBucket string
	// inspected is the deployment inspect reads (-local, -stack), where
	// -event is looked up; nil for a queue named by URL.
	inspected *inspect.Deployment
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tenantID := fs.String("tenant", "", "tenant id")
	queueURL := fs.String("queue-url", "", "the tenant's source queue URL (instead of -tenant's lookup)")
	template := fs.String("queue-url-template", os.Getenv("QUEUE_URL_TEMPLATE"), "tenant queue URL with {tenant} (instead of the stack's output)")
	stack := fs.String("stack", devstack.Getenv("STACK_NAME", "hookpack"), "deployed core stack (env STACK_NAME)")
	local := fs.Bool("local", false, "`make run`'s emulators instead of a deployed stack")
	name := fs.String("name", devstack.DefaultName, "-local: the local stack's name")
	endpoint := fs.String("endpoint", fmt.Sprintf("http://127.0.0.1:%d", devstack.GetenvInt("MOTO_PORT", 4566)), "-local: moto's endpoint (env MOTO_PORT)")
	ddbEndpoint := fs.String("dynamodb-endpoint", fmt.Sprintf("http://127.0.0.1:%d", devstack.GetenvInt("DYNAMODB_PORT", 8000)), "-local: DynamoDB Local's endpoint (env DYNAMODB_PORT; empty: moto's), where -event is looked up")
	logFile := fs.String("log-file", devstack.Getenv("LOG_FILE", devstack.DefaultLogFile), "-local: the functions' log `make run` writes, where -event is looked up (env LOG_FILE)")
	conversation := fs.String("conversation", "", "only this conversation (or message group)")
	eventType := fs.String("type", "", "only this event type")
	event := fs.String("event", "", "only this event: any id make inspect takes, looked up as it looks it up (-local, -stack)")
	bucket := fs.String("payload-bucket", os.Getenv("PAYLOAD_BUCKET"), "the payload bucket (default: the stack's PayloadBucketName): reads events over 1 MiB to show their type and conversation")
	dryRun := fs.Bool("dry-run", false, "redrive: show what would move, move nothing")
	asJSON := fs.Bool("json", false, "print one JSON object per message")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: replay [-local | -stack NAME | -queue-url URL] -tenant ID [-conversation C] [-type T] [-event ID] [-dry-run] list|redrive")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	usage := func(msg string) int {
		fmt.Fprintln(stderr, "replay:", msg)
		fmt.Fprintln(stderr, "usage: replay [-local | -stack NAME | -queue-url URL] -tenant ID [flags] list|redrive   (-h lists the flags)")
		return 2
	}
	if msg := check(fs); msg != "" {
		return usage(msg)
	}
	verb := fs.Arg(0)
	// Malformed input is refused before any call, by the check inspect
	// makes: an event key of another tenant or of no provider selects
	// nothing, and an empty id would select everything.
	var q *inspect.Query
	if *tenantID != "" {
		err := inspect.CheckTenant(*tenantID)
		if set(fs, "event") {
			q = &inspect.Query{Tenant: *tenantID, Event: *event}
			err = q.Check(inspect.Providers())
		}
		if err != nil {
			return fail(stderr, err)
		}
	}

	tg, err := resolve(ctx, *local, *stack, *name, *endpoint, *ddbEndpoint, *logFile, *queueURL, *template, *tenantID)
	if err == nil {
		err = exists(ctx, sqs.NewFromConfig(tg.cfg), tg.dlq, *tenantID)
	}
	if err != nil {
		return fail(stderr, err)
	}
	if *bucket != "" {
		tg.payloadBucket = *bucket
	}

	f := replay.Filter{Conversation: *conversation, Type: *eventType, Event: *event}
	// The event is looked up as inspect looks it up, for the keys it
	// resolves to and, when nothing is selected, its state.
	var journeys []inspect.Journey
	var lookup error
	if q != nil && tg.inspected != nil {
		journeys, lookup = inspect.NewAWS(tg.cfg, *tg.inspected, false).Inspect(ctx, *q)
		if lookup != nil && !errors.Is(lookup, inspect.ErrUnknownEvent) {
			return fail(stderr, lookup)
		}
		for _, j := range journeys {
			f.Keys = append(f.Keys, j.Key)
		}
	}

	client := sqs.NewFromConfig(tg.cfg)
	var o replay.Options
	if tg.payloadBucket != "" {
		o.Payloads = queue.NewPayloads(queue.NewS3(tg.cfg), tg.payloadBucket)
	}
	r := replay.New(client, queue.NewSQS(client), o)
	var items []replay.Item
	var seen int
	if verb == "list" {
		// Listed whole, so a selection of nothing can say what it saw.
		var all []replay.Item
		all, err = r.List(ctx, tg.dlq, replay.Filter{})
		seen = len(all)
		items = slices.DeleteFunc(all, func(it replay.Item) bool { return !f.Match(it) })
	} else {
		items, err = r.Redrive(ctx, tg.dlq, tg.source, f, *dryRun)
		seen = len(items)
	}
	report(stdout, items, *asJSON, verb == "redrive" && *dryRun)
	if err != nil {
		return fail(stderr, err)
	}
	if slices.ContainsFunc(items, f.Match) {
		return 0
	}
	switch {
	case q != nil && tg.inspected != nil:
		err = inspect.NotDeadLettered(*event, journeys, lookup)
	case q != nil:
		err = fmt.Errorf("%w: event %s: not in the DLQ (its state is looked up with -local or -stack: scripts/inspect tells it)", inspect.ErrNoDeadLetter, *event)
	case seen == 0:
		err = fmt.Errorf("%w: the DLQ holds no dead letter this run could see", inspect.ErrNoDeadLetter)
	default:
		err = fmt.Errorf("%w: none of the %d dead letters seen matches %s", inspect.ErrNoDeadLetter, seen, filterText(fs))
	}
	return fail(stderr, err)
}

// check returns what is wrong with the command line, or "": the command,
// the tenant, and a filter flag given empty, which would select every
// message (a script's unset variable must not redrive the whole DLQ).
func check(fs *flag.FlagSet) string {
	for _, name := range []string{"event", "conversation", "type"} {
		if set(fs, name) && fs.Lookup(name).Value.String() == "" {
			return fmt.Sprintf("-%s is empty: give a value, or leave the flag out to select every %s", name, name)
		}
	}
	tenant, queueURL := fs.Lookup("tenant").Value.String(), fs.Lookup("queue-url").Value.String()
	switch verb := fs.Arg(0); {
	case fs.NArg() == 0:
		return "one command is required, after the flags: list or redrive"
	case verb != "list" && verb != "redrive":
		return fmt.Sprintf("unknown command %s (list or redrive)", verb)
	case fs.NArg() > 1:
		return fmt.Sprintf("one command only, after the flags: got %s", strings.Join(fs.Args(), " "))
	case queueURL == "" && tenant == "":
		return "-tenant is required (or -queue-url)"
	case set(fs, "event") && tenant == "":
		return "-event needs -tenant: the event is looked up, and its key checked, within its tenant"
	case fs.Lookup("local").Value.String() == "true" && queueURL != "":
		return "-local finds the queue from -tenant; -queue-url is for a queue of your own"
	}
	return ""
}

// set reports whether flag name was given on the command line.
func set(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// filterText names the filter flags given.
func filterText(fs *flag.FlagSet) string {
	var parts []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "conversation" || f.Name == "type" || f.Name == "event" {
			parts = append(parts, "-"+f.Name+" "+f.Value.String())
		}
	})
	return strings.Join(parts, " ")
}

// fail prints err and returns its exit status (inspect.ExitStatus; a
// queue URL that names no DLQ is bad usage).
func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "replay:", err)
	if errors.Is(err, errUsage) {
		return 2
	}
	return inspect.ExitStatus(err)
}

// resolve finds the tenant's source queue and DLQ, the AWS configuration
// to reach them, and with -local or a stack the deployment inspect reads.
func resolve(ctx context.Context, local bool, stack, name, endpoint, ddbEndpoint, logFile, queueURL, template, tenantID string) (target, error) {
	var tg target
	var err error
	if local {
		if tg.cfg, err = emulator.AWSConfig(ctx, endpoint, ddbEndpoint); err != nil {
			return tg, err
		}
		d, err := devstack.Inspected(ctx, tg.cfg, name, tenantID)
		if err != nil {
			return tg, err
		}
		d.IngestLogFile = logFile // deployed: Logs Insights
		tg.source, tg.payloadBucket, tg.inspected = queue.URL(d.QueueURLTemplate, tenantID), d.PayloadBucket, &d
	} else {
		if tg.cfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return tg, fmt.Errorf("aws config: %w", err)
		}
		switch {
		case queueURL != "":
			tg.source = queueURL
		case template != "":
			tg.source = queue.URL(template, tenantID)
		default:
			d, err := inspect.FromStack(ctx, cloudformation.NewFromConfig(tg.cfg), stack)
			if err != nil {
				return tg, err
			}
			tg.source, tg.payloadBucket, tg.inspected = queue.URL(d.QueueURLTemplate, tenantID), d.PayloadBucket, &d
		}
	}
	if tg.dlq, err = worker.DLQURL(tg.source); err != nil {
		return tg, fmt.Errorf("%w: %w", errUsage, err)
	}
	return tg, nil
}

// exists checks the DLQ, so an unknown tenant is told as such.
func exists(ctx context.Context, client *sqs.Client, dlq, tenantID string) error {
	_, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(dlq), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) {
		return fmt.Errorf("%w %s: %s does not exist (is the tenant onboarded in this stack?)", inspect.ErrUnknownTenant, tenantID, dlq)
	}
	if err != nil {
		return fmt.Errorf("dead-letter queue %s: %w", dlq, err)
	}
	return nil
}

func report(w io.Writer, items []replay.Item, asJSON, dryRun bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, it := range items {
			_ = enc.Encode(it)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCONVERSATION\tTYPE\tEVENT\tATTEMPTS\tSENT\tREASON\tNOTE")
	count := map[string]int{}
	var order []string
	for _, it := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Status, it.GroupID, it.Type, it.EventKey, it.Attempts,
			it.SentAt.Format(time.RFC3339), it.Reason, it.Note)
		k := it.Status
		if it.Status == replay.StatusHeld {
			why, _, _ := strings.Cut(it.Note, " (")
			why, _, _ = strings.Cut(why, ":")
			k += " (" + why + ")"
		}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	_ = tw.Flush()
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%d %s", count[k], k)
	}
	fmt.Fprintf(w, "%d message(s)", len(items))
	if len(parts) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(parts, ", "))
	}
	if dryRun {
		fmt.Fprint(w, " — dry run, nothing moved")
	}
	fmt.Fprintln(w)
}
