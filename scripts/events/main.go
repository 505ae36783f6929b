// Command events writes the events `make invoke` and `sam local invoke` feed
// to the functions, from the provider samples under events/samples, each
// addressed to one tenant of the tenants file and signed now with that
// tenant's secret (see package samples).
//
//	make events      every event, fresh, into events/local/ (git-ignored):
//	                 events/local/ingest/*.json, events/local/worker/sqs-batch.json
//	go run ./scripts/events -committed
//	                 the committed events: events/ingest/* for the providers
//	                 whose signatures carry no timestamp (they stay valid, so
//	                 sam local invoke -e events/ingest/… answers the same in a
//	                 month), and events/worker/sqs-batch.json
//
// Timestamped schemes (Stripe, Slack, Standard Webhooks, Paddle via hmac)
// accept a few minutes of clock skew, so their events exist only under
// events/local: run `make events` shortly before invoking them. `make events`
// never writes a tracked file.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
)

func main() {
	tenants := flag.String("tenants", "events/tenants.json", "local tenants file whose secrets sign the events")
	id := flag.String("tenant", "demo", "tenant the events are addressed to")
	samplesDir := flag.String("samples", "events/samples", "sample deliveries, one folder per provider")
	committed := flag.Bool("committed", false, "write the committed events (timeless ones only) into events/ instead of events/local/")
	out := flag.String("out", "", "output folder of the ingest events (default events/local/ingest, or events/ingest with -committed); other .json files in it are removed")
	workerOut := flag.String("worker-out", "", "output folder of the worker's SQS event (default events/local/worker, or events/worker with -committed)")
	flag.Parse()
	dir := "events/local"
	if *committed {
		dir = "events"
	}
	if *out == "" {
		*out = filepath.Join(dir, "ingest")
	}
	if *workerOut == "" {
		*workerOut = filepath.Join(dir, "worker")
	}
	if err := run(*tenants, *id, *samplesDir, *out, *workerOut, *committed, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "make events:", err)
		os.Exit(1)
	}
}

// run writes the events; with timelessOnly, only those samples.Timeless
// accepts.
func run(tenantsFile, id, samplesDir, out, workerOut string, timelessOnly bool, now time.Time) error {
	t, err := devstack.LoadTenant(tenantsFile, id)
	if err != nil {
		return err
	}
	all, err := providertest.LoadSamples(samplesDir)
	if err != nil {
		return err
	}
	o := samples.Options{Tenant: id, Providers: t.Providers, Registry: provider.Registry(), Now: now}
	evs, err := samples.Generate(all, o)
	if err != nil {
		return err
	}
	if timelessOnly {
		keep := evs[:0]
		for _, ev := range evs {
			if samples.Timeless(ev, o) {
				keep = append(keep, ev)
			}
		}
		evs = keep
	}
	removed, err := samples.Write(out, evs)
	if err != nil {
		return err
	}
	for _, name := range removed {
		fmt.Printf("removed %s\n", filepath.Join(out, name))
	}
	for _, ev := range evs {
		fmt.Printf("wrote   %s\n", filepath.Join(out, ev.File))
	}
	batch, err := samples.WorkerBatch(all, samples.WorkerOptions{
		Tenant: id, Providers: t.Providers, Registry: provider.Registry(), Now: now,
		QueueARN: "arn:aws:sqs:us-east-1:123456789012:" + devstack.QueueName(devstack.DefaultName, id) + ".fifo",
	})
	if err != nil {
		return err
	}
	path, err := samples.WriteWorker(workerOut, batch)
	if err != nil {
		return err
	}
	fmt.Printf("wrote   %s (%d records)\n", path, len(batch.Records))
	return nil
}
