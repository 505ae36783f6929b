// Command replay lists a tenant's dead-lettered events with their reasons
// and moves them back to the tenant's queue, preserving each
// conversation's order. Replaying an event whose effects already completed
// is a no-op (the worker's effect ledger skips them). See package replay.
//
//	go run ./scripts/replay -tenant acme list
//	go run ./scripts/replay -tenant acme -conversation cus_42 -dry-run redrive
//	go run ./scripts/replay -queue-url https://sqs…/hookpack-acme.fifo -type invoice.paid redrive
//
// The queue URL comes from -queue-url, or from -queue-url-template (default
// $QUEUE_URL_TEMPLATE, "…/<stack>_{tenant}.fifo") and -tenant; the DLQ is
// "<name>-dlq.fifo" next to it. AWS credentials, region and endpoint come
// from the usual environment (AWS_ENDPOINT_URL for a local stack).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/tenantid"
	"github.com/hookpack/hookpack/pkg/worker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

func run() error {
	tenantID := flag.String("tenant", "", "tenant id (with -queue-url-template)")
	template := flag.String("queue-url-template", os.Getenv("QUEUE_URL_TEMPLATE"), "tenant queue URL with {tenant}")
	queueURL := flag.String("queue-url", "", "the tenant's source queue URL (instead of -tenant and -queue-url-template)")
	conversation := flag.String("conversation", "", "only this conversation (or message group)")
	eventType := flag.String("type", "", "only this event type")
	bucket := flag.String("payload-bucket", os.Getenv("PAYLOAD_BUCKET"), "the stack's payload bucket (PayloadBucketName output): reads events over 1 MiB to show their type and conversation")
	dryRun := flag.Bool("dry-run", false, "redrive: show what would move, move nothing")
	asJSON := flag.Bool("json", false, "print one JSON object per message")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: replay [flags] list|redrive")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || (flag.Arg(0) != "list" && flag.Arg(0) != "redrive") {
		flag.Usage()
		return errors.New("one command is required: list or redrive")
	}
	source := *queueURL
	if source == "" {
		if err := tenantid.Validate(*tenantID); err != nil || *template == "" {
			return errors.New("give -queue-url, or -tenant and -queue-url-template (or QUEUE_URL_TEMPLATE)")
		}
		source = queue.URL(*template, *tenantID)
	}
	dlq, err := worker.DLQURL(source)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	client := sqs.NewFromConfig(cfg)
	var o replay.Options
	if *bucket != "" {
		o.Payloads = queue.NewPayloads(queue.NewS3(cfg), *bucket)
	}
	r := replay.New(client, queue.NewSQS(client), o)
	f := replay.Filter{Conversation: *conversation, Type: *eventType}

	var items []replay.Item
	if flag.Arg(0) == "list" {
		items, err = r.List(ctx, dlq, f)
	} else {
		items, err = r.Redrive(ctx, dlq, source, f, *dryRun)
	}
	report(items, *asJSON)
	return err
}

func report(items []replay.Item, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		for _, it := range items {
			_ = enc.Encode(it)
		}
		return
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "STATUS\tCONVERSATION\tTYPE\tEVENT\tATTEMPTS\tSENT\tREASON\tNOTE")
	for _, it := range items {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Status, it.GroupID, it.Type, it.EventKey, it.Attempts,
			it.SentAt.Format(time.RFC3339), it.Reason, it.Note)
	}
	_ = w.Flush()
	fmt.Printf("%d message(s)\n", len(items))
}
