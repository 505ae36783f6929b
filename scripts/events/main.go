// Command events is `make events`: it regenerates events/ingest/* (and the
// worker's SQS batch, events/worker/sqs-batch.json) from the
// provider samples under events/samples, each addressed to one tenant of
// the tenants file and re-signed now with that tenant's secret, so
//
//	make events && make invoke FUNCTION=IngestFunction EVENT=events/ingest/stripe-customer-created.json
//
// is accepted by the stack `make run` provisions from the same tenants file.
// Timestamped schemes (Stripe, Slack, Standard Webhooks, Paddle via hmac)
// accept a few minutes of clock skew, so regenerate shortly before invoking.
// See package samples.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/tenant"
)

func main() {
	tenants := flag.String("tenants", "events/tenants.json", "local tenants file whose secrets sign the events")
	id := flag.String("tenant", "demo", "tenant the events are addressed to")
	samples := flag.String("samples", "events/samples", "sample deliveries, one folder per provider")
	out := flag.String("out", "events/ingest", "output folder; other .json files in it are removed")
	workerOut := flag.String("worker-out", "events/worker", "output folder of the worker's SQS event")
	flag.Parse()
	if err := run(*tenants, *id, *samples, *out, *workerOut); err != nil {
		fmt.Fprintln(os.Stderr, "make events:", err)
		os.Exit(1)
	}
}

func run(tenantsFile, id, samplesDir, out, workerOut string) error {
	f, err := tenant.LoadFile(tenantsFile)
	if err != nil {
		return err
	}
	t, ok := f.Tenants[id]
	if !ok {
		return fmt.Errorf("tenants file %s has no tenant %q", tenantsFile, id)
	}
	all, err := samples.LoadSamples(samplesDir)
	if err != nil {
		return err
	}
	evs, err := samples.Generate(all, samples.Options{
		Tenant: id, Providers: t.Providers, Registry: provider.Registry(), Now: time.Now(),
	})
	if err != nil {
		return err
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
		Tenant: id, Providers: t.Providers, Registry: provider.Registry(), Now: time.Now(),
		QueueARN: "arn:aws:sqs:us-east-1:123456789012:hookpack-local-" + id + ".fifo",
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
