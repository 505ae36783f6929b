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
//	go run ./scripts/replay -local -tenant demo -destination billing redrive   # billing's stream only
//
// -destination selects the dead letters of one destination's stream (their
// hookpack.stream attribute names it), checked against the tenant's routes
// parameter (<prefix>/tenants/<tenant>/routes: the stack's, or "/<stack>"
// with -queue-url); a dead letter that names no destination (the custom
// effects', or one without the attribute: a targetUrl tenant's, or queued
// before its tenant had streams) is never in it. DESTINATION in the listing
// names each one's stream.
//
// The tenant's queue comes from -queue-url; or from -queue-url-template
// (default $QUEUE_URL_TEMPLATE, "…/<stack>_{tenant}.fifo") and -tenant; or,
// deployed, from the core stack's QueueUrlPattern output (-stack, default
// $STACK_NAME or hookpack; its PayloadBucketName too); or, with -local, from
// `make run`'s emulators (moto at -endpoint, fake credentials, its region).
// The DLQ is "<name>-dlq.fifo" next to it. Deployed, credentials and region
// come from the usual AWS environment.
//
// Exit status: 0 done, 1 an AWS call failed (what moved stays moved), 2 bad
// usage: a missing or malformed argument, an unknown tenant or destination,
// a stack that is not a core stack.
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
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/tenantid"
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
	// params is the stack's tenant parameter prefix (tenant.NewSSM's).
	params string
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
	conversation := fs.String("conversation", "", "only this conversation (or message group)")
	eventType := fs.String("type", "", "only this event type")
	destination := fs.String("destination", "", "only the dead letters of this destination's stream (never those that name no destination)")
	event := fs.String("event", "", "only this event: the sender's id, the ingest's eventId or the key tenant#provider#id (as make inspect takes)")
	bucket := fs.String("payload-bucket", os.Getenv("PAYLOAD_BUCKET"), "the payload bucket (default: the stack's PayloadBucketName): reads events over 1 MiB to show their type and conversation")
	dryRun := fs.Bool("dry-run", false, "redrive: show what would move, move nothing")
	asJSON := fs.Bool("json", false, "print one JSON object per message")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: replay [-local | -stack NAME | -queue-url URL] -tenant ID [-conversation C] [-type T] [-event ID] [-destination NAME] [-dry-run] list|redrive")
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
	verb := fs.Arg(0)
	switch {
	case fs.NArg() != 1 || verb != "list" && verb != "redrive":
		return usage("one command is required, after the flags: list or redrive")
	case *queueURL == "" && *tenantID == "":
		return usage("-tenant is required (or -queue-url)")
	case *destination != "" && *tenantID == "":
		return usage("-destination needs -tenant: the name is checked against the tenant's destinations")
	case *local && *queueURL != "":
		return usage("-local finds the queue from -tenant; -queue-url is for a queue of your own")
	}
	if *tenantID != "" {
		if err := tenantid.Validate(*tenantID); err != nil {
			return usage(fmt.Sprintf("-tenant %q: %v", *tenantID, err))
		}
	}

	tg, err := resolve(ctx, *local, *stack, *name, *endpoint, *queueURL, *template, *tenantID)
	if err == nil {
		err = exists(ctx, sqs.NewFromConfig(tg.cfg), tg.dlq, *tenantID)
	}
	if err == nil && *destination != "" {
		err = replay.CheckDestination(ctx, tenant.NewSSM(ssm.NewFromConfig(tg.cfg), tg.params), *tenantID, *destination)
	}
	if err != nil {
		fmt.Fprintln(stderr, "replay:", err)
		if errors.Is(err, errUsage) || errors.Is(err, inspect.ErrUnknownTenant) || errors.Is(err, inspect.ErrNotCoreStack) || errors.Is(err, replay.ErrUnknownDestination) {
			return 2
		}
		return 1
	}
	if *bucket != "" {
		tg.payloadBucket = *bucket
	}

	client := sqs.NewFromConfig(tg.cfg)
	var o replay.Options
	if tg.payloadBucket != "" {
		o.Payloads = queue.NewPayloads(queue.NewS3(tg.cfg), tg.payloadBucket)
	}
	r := replay.New(client, queue.NewSQS(client), o)
	f := replay.Filter{Conversation: *conversation, Type: *eventType, Event: *event, Destination: *destination}
	var items []replay.Item
	if verb == "list" {
		items, err = r.List(ctx, tg.dlq, f)
	} else {
		items, err = r.Redrive(ctx, tg.dlq, tg.source, f, *dryRun)
	}
	report(stdout, items, *asJSON, verb == "redrive" && *dryRun)
	if err != nil {
		fmt.Fprintln(stderr, "replay:", err)
		return 1
	}
	return 0
}

// resolve finds the tenant's source queue and DLQ, and the AWS
// configuration to reach them.
func resolve(ctx context.Context, local bool, stack, name, endpoint, queueURL, template, tenantID string) (target, error) {
	var tg target
	var err error
	if local {
		if tg.cfg, err = emulator.AWSConfig(ctx, endpoint, ""); err != nil {
			return tg, err
		}
		d, err := devstack.Inspected(ctx, tg.cfg, name, tenantID)
		if err != nil {
			return tg, err
		}
		tg.source, tg.payloadBucket, tg.params = queue.URL(d.QueueURLTemplate, tenantID), d.PayloadBucket, d.ParameterPrefix
	} else {
		if tg.cfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return tg, fmt.Errorf("aws config: %w", err)
		}
		tg.params = "/" + stack // template.yaml's TenantParameterPrefix, less "/tenants"
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
			tg.source, tg.payloadBucket, tg.params = queue.URL(d.QueueURLTemplate, tenantID), d.PayloadBucket, d.ParameterPrefix
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
	fmt.Fprintln(tw, "STATUS\tDESTINATION\tCONVERSATION\tTYPE\tEVENT\tATTEMPTS\tSENT\tREASON\tNOTE")
	count := map[string]int{}
	var order []string
	for _, it := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Status, it.StreamLabel(), it.GroupID, it.Type, it.EventKey, it.Attempts,
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
