// Command cost is `make cost`: it measures what webhooks cost on the local
// emulators — AWS requests counted by an SDK middleware, the handlers'
// durations, and the bytes of their log lines — for the whole path (ingest,
// queue, worker, forward effect to a target), for each workload of
// cost.Mixes, then prices it per million webhooks at us-east-1 list prices
// (package cost) and writes the tables to stdout (and to -out, default
// docs/cost.md).
//
// Durations are measured against the emulators on this machine, whose
// latency is of the same order as DynamoDB and SQS inside a region, and
// priced at their median: the mean, which Lambda's bill follows, is printed
// too, but on a shared machine it measures the neighbours' load as much as
// the function. -ingest-ms and -worker-ms override them with figures
// observed in AWS.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ingest"
	"github.com/hookpack/hookpack/pkg/local/apigw"
	"github.com/hookpack/hookpack/pkg/local/awscount"
	"github.com/hookpack/hookpack/pkg/local/cost"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/webhook"
	"github.com/hookpack/hookpack/pkg/worker"
)

// Budget is the target per million webhooks.
const Budget = 4.00

// before is what make cost measured per accepted webhook of the first mix
// without the levers (commit 96fc6d6): the levers' "before" column.
var before = struct {
	ingestWrites, workerWrites, logBytes float64
	total                                float64
}{ingestWrites: 2, workerWrites: 3, logBytes: 1259, total: 5.69}

func main() {
	out := flag.String("out", "docs/cost.md", "markdown file to write (empty: stdout only)")
	ingestMs := flag.Float64("ingest-ms", 0, "override the measured ingest duration (ms)")
	workerMs := flag.Float64("worker-ms", 0, "override the measured worker duration per invocation (ms)")
	flag.Parse()
	if err := run(*out, *ingestMs, *workerMs); err != nil {
		fmt.Fprintln(os.Stderr, "make cost:", err)
		os.Exit(1)
	}
}

type byteCounter struct {
	mu sync.Mutex
	n  int
}

func (b *byteCounter) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.n += len(p)
	b.mu.Unlock()
	return len(p), nil
}

func (b *byteCounter) take() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.n
	b.n = 0
	return n
}

// measured is one mix's run.
type measured struct {
	mix                    cost.Mix
	accepted, invocations  int
	ingest, worker         map[string]int
	ingestMs, workerMs     float64 // medians
	ingestMean, workerMean float64
	// measured medians, when -ingest-ms or -worker-ms priced others
	measuredIngestMs, measuredWorkerMs float64
	ingestBytes, workerBytes           int
	usage                              cost.Usage
}

func run(outFile string, ingestOverride, workerOverride float64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// The destinations' receiver: it answers 200 to every delivery and
	// counts them.
	var received atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		received.Add(1)
	}))
	defer recv.Close()
	tenants, err := tenantsFile(recv.URL)
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(tenants))
	// Any free port: the tenants' targetUrls follow the target service.
	s, err := devstack.Start(ctx, devstack.Options{Name: "hookpack-cost", TenantsFile: tenants, Addr: "127.0.0.1:0", TargetAddr: "127.0.0.1:0", ManualWorker: true, DynamoDBLocalDir: devstack.EnvOptions().DynamoDBLocalDir})
	if err != nil {
		return err
	}
	defer s.Close()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = s.Serve(sctx) }() // the target service

	ingestReqs, workerReqs := awscount.New(), awscount.New()
	ingestLog, workerLog := &byteCounter{}, &byteCounter{}
	// The functions log at INFO, as Lambda's ApplicationLogLevel does.
	ih := ingest.NewAWS(ingestReqs.Install(s.AWS), s.Settings, slog.New(slog.NewJSONHandler(ingestLog, nil)))
	wh := worker.NewAWS(workerReqs.Install(s.AWS), s.Worker, slog.New(slog.NewJSONHandler(workerLog, nil)))
	sq := sqs.NewFromConfig(workerReqs.Install(s.AWS))

	// A warm-up run first, not reported: DynamoDB Local's JVM compiles its
	// hot paths during the first requests, and that is no part of what a
	// Lambda invocation waits for in AWS.
	mixes := append([]cost.Mix{{Name: "warm-up", Webhooks: 100, PerConversation: 5}}, cost.Mixes...)
	var runs []measured
	for mi, mix := range mixes {
		m := measured{mix: mix}
		tenantID := "demo"
		if mix.Destinations != "" {
			tenantID = destinationsTenant
		}
		cfg := s.Tenants.Tenants[tenantID].Providers["stripe"]
		receivedBefore := received.Load()
		// Ingest: the mix's Stripe events, signed, as API Gateway delivers
		// them; a duplicate is the same delivery again.
		sent := map[int]events.APIGatewayV2HTTPRequest{}
		var ingestDur []time.Duration
		appliedBefore := len(s.Target.Applied())
		for _, d := range mix.Deliveries() {
			ev, ok := sent[d.Event]
			if !ok {
				body := fmt.Sprintf(`{"id":"evt_cost%d_%d_%d","object":"event","type":"invoice.paid","data":{"object":{"id":"in_%d","object":"invoice","customer":"cus_%d_%d","amount_paid":4200,"currency":"usd"}}}`,
					mi, time.Now().UnixNano(), d.Event, d.Event, mi, d.Conversation)
				if ev, err = apiEvent(body, cfg, tenantID); err != nil {
					return err
				}
				sent[d.Event] = ev
			}
			start := time.Now()
			resp, _ := ih.Handle(ctx, ev)
			ingestDur = append(ingestDur, time.Since(start))
			want := `"status":"accepted"`
			if d.Duplicate {
				want = `"status":"duplicate"`
			}
			if resp.StatusCode != 200 || !strings.Contains(resp.Body, want) {
				return fmt.Errorf("%s: ingest answered %d %s, want %s", mix.Name, resp.StatusCode, resp.Body, want)
			}
			if !d.Duplicate {
				m.accepted++
			}
		}

		// Worker: drain the queue the way the event source mapping does.
		// With two or more destinations an event is queued as one message
		// for its custom effects and one per destination that selects it.
		messages := m.accepted
		if mix.Destinations != "" {
			messages = m.accepted * (1 + mix.PerEvent)
		}
		var workerDur []time.Duration
		processed := 0
		for empty := 0; processed < messages && empty < 20; {
			ev, err := esm.Receive(ctx, sq, s.Queues[tenantID].URL, esm.ReceiveOptions{})
			if err != nil {
				return err
			}
			if len(ev.Records) == 0 {
				empty++
				time.Sleep(100 * time.Millisecond)
				continue
			}
			wctx, wcancel := context.WithTimeout(ctx, devstack.WorkerTimeout)
			start := time.Now()
			resp, err := wh.Handle(wctx, ev)
			workerDur = append(workerDur, time.Since(start))
			wcancel()
			if err != nil {
				return err
			}
			if err := esm.Settle(ctx, sq, s.Queues[tenantID].URL, ev, resp); err != nil {
				return err
			}
			m.invocations++
			processed += len(ev.Records) - len(resp.BatchItemFailures)
		}
		if mix.Destinations != "" {
			if got := int(received.Load() - receivedBefore); got != m.accepted*mix.PerEvent {
				return fmt.Errorf("%s: the destinations received %d deliveries, want %d", mix.Name, got, m.accepted*mix.PerEvent)
			}
		} else if applied := len(s.Target.Applied()) - appliedBefore; applied != m.accepted {
			return fmt.Errorf("%s: target applied %d of %d effects", mix.Name, applied, m.accepted)
		}
		m.ingest, m.worker = ingestReqs.Take(), workerReqs.Take()
		m.ingestBytes, m.workerBytes = ingestLog.take(), workerLog.take()
		m.ingestMs, m.ingestMean = stats(ingestDur)
		m.workerMs, m.workerMean = stats(workerDur)
		m.measuredIngestMs, m.measuredWorkerMs = m.ingestMs, m.workerMs
		if ingestOverride > 0 {
			m.ingestMs = ingestOverride
		}
		if workerOverride > 0 {
			m.workerMs = workerOverride
		}
		m.usage = usage(m)
		if mi > 0 {
			runs = append(runs, m)
		}
	}
	b := report(runs)
	if _, err := io.Copy(os.Stdout, bytes.NewReader(b)); err != nil {
		return err
	}
	if outFile != "" {
		if err := os.MkdirAll(filepath.Dir(outFile), 0o755); err != nil {
			return err
		}
		return os.WriteFile(outFile, b, 0o644)
	}
	return nil
}

// stats returns the median and the mean of ds in milliseconds.
func stats(ds []time.Duration) (median, mean float64) {
	if len(ds) == 0 {
		return 0, 0
	}
	sorted := append([]time.Duration(nil), ds...)
	slices.Sort(sorted)
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return ms(sorted[len(sorted)/2]), ms(total) / float64(len(ds))
}

func sum(counts map[string]int, service string, ops ...string) int {
	t := 0
	for _, op := range ops {
		t += counts[service+"."+op]
	}
	return t
}

var writes = []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}

// usage is a run's usage per webhook received (deliveries, duplicates
// included).
func usage(m measured) cost.Usage {
	per := func(x int) float64 { return float64(x) / float64(m.mix.Webhooks) }
	return cost.Usage{
		Functions: []cost.Function{
			{Name: "ingest", Invocations: 1, DurationMs: m.ingestMs, MemoryMB: 256},
			{Name: "worker", Invocations: per(m.invocations), DurationMs: m.workerMs, MemoryMB: 256},
		},
		DynamoWrites: per(sum(m.ingest, "DynamoDB", writes...) + sum(m.worker, "DynamoDB", writes...)),
		DynamoReads:  per(sum(m.ingest, "DynamoDB", "GetItem", "Query") + sum(m.worker, "DynamoDB", "GetItem", "Query")),
		SQSRequests: per(sum(m.ingest, "SQS", "SendMessage", "SendMessageBatch") +
			sum(m.worker, "SQS", "ReceiveMessage", "DeleteMessageBatch", "DeleteMessage", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch", "SendMessage")),
		SQSQueueReads: per(sum(m.ingest, "SQS", "GetQueueAttributes") + sum(m.worker, "SQS", "GetQueueAttributes")),
		LogBytes:      per(m.ingestBytes + m.workerBytes),
		StoredBytes:   400 * float64(m.accepted) / float64(m.mix.Webhooks),
		RetentionDays: 7,
	}
}

func report(runs []measured) []byte {
	var b bytes.Buffer
	cmd := "make cost"
	if len(os.Args) > 1 {
		cmd = "go run ./scripts/cost " + strings.Join(os.Args[1:], " ")
	}
	fmt.Fprintf(&b, "# Cost per million webhooks\n\nGenerated by `%s` on %s: each workload below goes through the whole local pipeline\n", cmd, time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "(Stripe deliveries → ingest → SQS FIFO → worker → ledger → signed forward to a target; DynamoDB Local, moto)\n")
	fmt.Fprintf(&b, "and is priced per million webhooks received (duplicates included) at us-east-1 list prices (pkg/local/cost).\n")
	fmt.Fprintf(&b, "Lambda platform lines (START/END/REPORT) are not billed: the template sets `SystemLogLevel: WARN`; a message done logs at DEBUG, which `ApplicationLogLevel: INFO` drops.\n")
	if len(os.Args) > 1 {
		fmt.Fprintf(&b, "Lambda durations are priced at the flags' figures (make cost on an idle machine measured ingest 17.1 ms and worker 42.4 ms per invocation, commit f617af2); each workload shows this run's own medians beside them, which on a shared machine follow its load. All request counts and log bytes are this run's.\n\n")
	} else {
		fmt.Fprintf(&b, "Durations are the median per invocation measured against the emulators on this machine (means beside them), after a warm-up of 100 webhooks.\n\n")
	}
	fmt.Fprintf(&b, "| workload | USD per million | against $%.2f |\n|---|---:|---|\n", Budget)
	for _, m := range runs {
		t := cost.Total(cost.PerMillion(cost.USEast1, m.usage))
		verdict := "within"
		switch {
		case m.mix.Destinations != "":
			verdict = fmt.Sprintf("not held to it: %d deliveries per event", m.mix.PerEvent)
		case t > Budget:
			verdict = fmt.Sprintf("**over by $%.2f**", t-Budget)
		}
		fmt.Fprintf(&b, "| %s | **%.2f** | %s |\n", m.mix.Name, t, verdict)
	}
	for _, m := range runs {
		n := m.mix.Webhooks
		fmt.Fprintf(&b, "\n## %s\n\n", m.mix.Name)
		fmt.Fprintf(&b, "%d deliveries, %d accepted, %d duplicates. Per delivery: ingest %.2f DynamoDB writes + %.2f SQS sends, worker %.2f DynamoDB writes; ",
			n, m.accepted, n-m.accepted, float64(sum(m.ingest, "DynamoDB", writes...))/float64(n), float64(sum(m.ingest, "SQS", "SendMessage", "SendMessageBatch"))/float64(n),
			float64(sum(m.worker, "DynamoDB", writes...))/float64(n))
		fmt.Fprintf(&b, "%.1f messages per worker invocation; ", float64(m.accepted)/float64(m.invocations))
		if m.ingestMs != m.measuredIngestMs || m.workerMs != m.measuredWorkerMs {
			fmt.Fprintf(&b, "priced at ingest %.1f ms, worker %.1f ms per invocation (-ingest-ms, -worker-ms; measured on this run: medians %.1f and %.1f ms, means %.1f and %.1f ms); ",
				m.ingestMs, m.workerMs, m.measuredIngestMs, m.measuredWorkerMs, m.ingestMean, m.workerMean)
		} else {
			fmt.Fprintf(&b, "ingest %.1f ms, worker %.1f ms per invocation (medians; means %.1f and %.1f ms); ", m.ingestMs, m.workerMs, m.ingestMean, m.workerMean)
		}
		fmt.Fprintf(&b, "log bytes %.0f (ingest %.0f, worker %.0f).\n\n", m.usage.LogBytes, float64(m.ingestBytes)/float64(n), float64(m.workerBytes)/float64(n))
		cost.Write(&b, "per million webhooks", cost.PerMillion(cost.USEast1, m.usage))
		fmt.Fprintf(&b, "\nAWS requests counted (all %d deliveries): ingest %s; worker %s.\n", n, counts(m.ingest), counts(m.worker))
	}

	first := runs[0]
	u := first.usage
	total := cost.Total(cost.PerMillion(cost.USEast1, u))
	fmt.Fprintf(&b, "\n## Levers, before and after\n\n")
	fmt.Fprintf(&b, "Each lever on the first workload, priced by swapping its measured usage back to what the design without it measured (commit 96fc6d6, $%.2f); the rest of the row is today's measurement.\n\n", before.total)
	fmt.Fprintf(&b, "| change | before | after | USD per million without it | with it |\n|---|---|---|---:|---:|\n")
	worker := float64(sum(first.worker, "DynamoDB", writes...)) / float64(first.mix.Webhooks)
	ingestW := float64(sum(first.ingest, "DynamoDB", writes...)) / float64(first.mix.Webhooks)
	logs := u
	logs.LogBytes = before.logBytes
	fmt.Fprintf(&b, "| one INFO line per webhook (ingest ≤ 300 B, metric filters instead of its EMF block), worker success at DEBUG, EMF once per batch and outcome | %.0f log bytes | %.0f log bytes | %.2f | %.2f |\n",
		before.logBytes, u.LogBytes, cost.Total(cost.PerMillion(cost.USEast1, logs)), total)
	ledger := u
	ledger.DynamoWrites += before.workerWrites - worker
	fmt.Fprintf(&b, "| worker fence from the SQS FIFO SequenceNumber (no counter UpdateItem) and completion by the message's deletion (no Complete UpdateItem): one Claim UpdateItem per message | %.0f worker writes (Take, Claim, Complete) | %.2f (Claim) | %.2f | %.2f |\n",
		before.workerWrites, worker, cost.Total(cost.PerMillion(cost.USEast1, ledger)), total)
	ingestR := float64(sum(first.ingest, "DynamoDB", "GetItem")) / float64(first.mix.Webhooks)
	claim := u
	claim.DynamoWrites += before.ingestWrites - ingestW
	claim.DynamoReads -= ingestR
	fmt.Fprintf(&b, "| ingest reads the key first (strongly consistent GetItem, 1 RRU) and writes it once, after the send (a conditional PutItem COMPLETED), instead of an INPROGRESS claim with a lease before the send and its completion after: overlapping deliveries each send under one deduplication id, SQS keeps one copy | %.0f writes | %.2f writes + %.2f reads | %.2f | %.2f |\n",
		before.ingestWrites, ingestW, ingestR, cost.Total(cost.PerMillion(cost.USEast1, claim)), total)
	if len(runs) > 1 && runs[1].mix.DuplicateShare > 0 {
		// The claim cost every delivery a write, duplicates included (a
		// failed conditional PutItem), and each accepted event a
		// completion; the read costs every delivery a read.
		d := runs[1]
		n := float64(d.mix.Webhooks)
		old := d.usage
		old.DynamoWrites += (float64(d.mix.Webhooks+d.accepted) - float64(sum(d.ingest, "DynamoDB", writes...))) / n
		old.DynamoReads -= float64(sum(d.ingest, "DynamoDB", "GetItem")) / n
		fmt.Fprintf(&b, "\nThe same change on the duplicates workload: $%.2f without it, $%.2f with it (each duplicate costs a read instead of a failed conditional write).\n",
			cost.Total(cost.PerMillion(cost.USEast1, old)), cost.Total(cost.PerMillion(cost.USEast1, d.usage)))
	}
	writesKept(&b, first)

	fmt.Fprintf(&b, "\nWhat would cut it further (recomputed with the same model):\n\n| change | USD per million | saving |\n|---|---:|---:|\n")
	lever := func(name string, v cost.Usage, p cost.Prices) {
		t := cost.Total(cost.PerMillion(p, v))
		fmt.Fprintf(&b, "| %s | %.2f | −%.2f |\n", name, t, total-t)
	}
	prov := cost.USEast1
	prov.DynamoWritePerMillion = 0.00065 / 3600 / 0.7 * 1e6 // provisioned WCU-hour at 70% utilisation
	lever("DynamoDB provisioned capacity with auto scaling at 70% utilisation (steady traffic)", u, prov)
	url := cost.USEast1
	url.HTTPAPIPerMillion = 0
	lever("Lambda function URL instead of the HTTP API (no per-request price; loses API Gateway throttling and custom domains)", u, url)
	mem := u
	mem.Functions = append([]cost.Function(nil), u.Functions...)
	mem.Functions[0].MemoryMB = 128
	lever("ingest at 128 MB (if its duration holds: it waits on DynamoDB and SQS)", mem, cost.USEast1)
	strict := u
	strict.DynamoWrites += worker // a Complete per effect: one per message here
	fmt.Fprintf(&b, "\nWith `WorkerCompleteEffects=true` (the forward's completion written as it runs too, as custom effects always do) the first workload costs $%.2f.\n",
		cost.Total(cost.PerMillion(cost.USEast1, strict)))

	destinations(&b, first)

	// The durations are the emulators' on one machine; in AWS every call
	// crosses the network. Say what that does to the total.
	inAWS := u
	inAWS.Functions = append([]cost.Function(nil), u.Functions...)
	inAWS.Functions[0].DurationMs, inAWS.Functions[1].DurationMs = 40, 100
	fmt.Fprintf(&b, "\nSensitivity: the durations above are measured against local emulators; in AWS each DynamoDB and SQS call crosses the network. "+
		"Priced at ingest 40 ms and worker 100 ms per invocation (an assumption, about 10 ms per DynamoDB write and 20 ms per SQS call, not a measurement) the first workload costs $%.2f; "+
		"each further 10 ms of ingest adds $%.3f.\n",
		cost.Total(cost.PerMillion(cost.USEast1, inAWS)), 0.01*u.Functions[0].Invocations*u.Functions[0].MemoryMB/1024*cost.USEast1.LambdaArmGBSecond*1e6)

	fmt.Fprintf(&b, "\nFixed cost per tenant per month (idle):\n\n")
	cost.Write(&b, "per tenant-month", cost.PerTenantMonth(cost.USEast1, cost.DefaultTenant))
	return b.Bytes()
}

// writesKept lists every DynamoDB write the pack makes, measured per
// delivery on m, the first workload, with the promise each keeps.
func writesKept(b *bytes.Buffer, m measured) {
	n := float64(m.mix.Webhooks)
	fmt.Fprintf(b, "\n## The writes that stay, and the promise each keeps\n\n")
	fmt.Fprintf(b, "| write | per delivery (first workload) | the promise it keeps (README) |\n|---|---:|---|\n")
	fmt.Fprintf(b, "| ingest: the key recorded once its event is queued (PutItem COMPLETED, conditional; its only write) | %.2f | **Verified, deduplicated for %d days**: a provider's retry or a captured delivery re-sent after SQS's 5-minute deduplication is answered `200 duplicate` without a send, and an id reused with another payload `409`, for the whole window; before the send nothing is written, so **queued before 2xx** needs no write |\n",
		float64(sum(m.ingest, "DynamoDB", writes...))/n, int(idempotency.DefaultRetention/(24*time.Hour)))
	fmt.Fprintf(b, "| worker: each message's claim of its event's ledger record (UpdateItem, fenced by the message's SequenceNumber; a message done is completed by its deletion, no write) | %.2f | **Effects once** and **one outcome per event**: every copy of an event (a lost deletion, a duplicate invocation, a redrive, a re-send after 5 minutes) reads its event's record before it runs anything, a stale worker's write is fenced off, and the dead mark lives there |\n",
		float64(sum(m.worker, "DynamoDB", writes...))/n)
	fmt.Fprintf(b, "| worker, with two or more destinations: each destination's stream message claims its own record (UpdateItem) | 1 per selecting destination | **In order per conversation and destination** and **effects once** per destination: a destination's failure or dead letter never touches another's delivery of the same event |\n")
	fmt.Fprintf(b, "| worker, a rated destination: its slots reserved once per invocation it reaches (UpdateItem) | 1 per invocation and rated destination | the destination's `rate` across every concurrent invocation |\n")
	fmt.Fprintf(b, "| worker, only on failures and operators' actions: an attempt count and a completion for a message reported failed, a dead mark, a custom effect's completion (or every forward's with `WorkerCompleteEffects=true`), a destination's failure streak, auto-pause, pause and resume | 0 on these workloads | **waiting is not failing** (attempts counted, never waits), **one outcome per event** (the dead mark), **effects once** for custom effects (`ev.Repeat` only after an interrupted run), paused destinations |\n")
}

// destinations prices cost.DestinationMixes on m, the first workload (one
// targetUrl): computed from its measured counts, not run through the
// pipeline.
func destinations(b *bytes.Buffer, m measured) {
	n := float64(m.mix.Webhooks)
	accepted, invocations := float64(m.accepted)/n, float64(m.invocations)/n
	base := cost.Total(cost.PerMillion(cost.USEast1, m.usage))
	fmt.Fprintf(b, "\n## Destinations\n\n"+
		"Computed, not run through the pipeline: the first workload's measured usage (%.2f worker invocations and %.2f accepted events per webhook) "+
		"with each destination a stream of its own (docs/architecture.md, \"Streams\"). One destination keeps the targetUrl's one message, its "+
		"delivery's record the event's. With two or more, an event is queued as one message for its custom effects (no write without them) plus one "+
		"per destination that selects it, in the same SendMessageBatch: each claims its own ledger record (UpdateItem, 1 WRU) and takes its share of "+
		"the receives, deletes, worker invocations and queue reads. A rated destination reserves its slots once per worker invocation it reaches "+
		"(UpdateItem, 1 WRU). Filters cost no call. The reservation's count is measured by pkg/ratelimit's BenchmarkReserveDynamoDB (1.00 call per "+
		"reservation from one invocation at a time). A 429 costs at most one more UpdateItem ($%.3f per million 429s); worker durations are the single target's.\n\n",
		invocations, accepted, cost.USEast1.DynamoWritePerMillion)
	fmt.Fprintf(b, "| destinations | messages per event | DynamoDB writes per webhook | USD per million | against one targetUrl |\n|---|---:|---:|---:|---:|\n")
	price := map[string]float64{}
	for _, d := range cost.DestinationMixes {
		u := d.Apply(m.usage, accepted, invocations)
		t := cost.Total(cost.PerMillion(cost.USEast1, u))
		price[d.Name] = t
		fmt.Fprintf(b, "| %s | %.0f | %.2f | **%.2f** | +%.2f |\n", d.Name, d.Messages(), u.DynamoWrites, t, t-base)
	}
	// What one more destination selecting every event adds, from the rows
	// of two and three such destinations.
	further := price["three destinations, every event"] - price["two destinations, every event"]
	receives := (m.usage.SQSRequests - accepted) * cost.USEast1.SQSFIFOPerMillion
	fmt.Fprintf(b, "\nEach further destination that selects every event adds $%.2f per million: its ledger write ($%.3f), its receive and delete ($%.2f: FIFO event "+
		"source mappings take at most 10 messages a batch), and its share of worker invocations and queue reads ($%.2f). The second destination adds the "+
		"custom effects' message too ($%.2f).\n",
		further, cost.USEast1.DynamoWritePerMillion, receives, further-cost.USEast1.DynamoWritePerMillion-receives,
		price["two destinations, every event"]-base-further)
}

// counts formats request counts in a stable order.
func counts(c map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

// destinationsTenant receives the mixes with destinations.
const destinationsTenant = "dests"

// tenantsFile writes events/tenants.json with destinationsTenant added (the
// demo tenant's senders, the destinations of the mix that has them, at
// url) to a temporary directory and returns its path.
func tenantsFile(url string) (string, error) {
	raw, err := os.ReadFile("events/tenants.json")
	if err != nil {
		return "", err
	}
	var f struct {
		Tenants map[string]map[string]json.RawMessage `json:"tenants"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", fmt.Errorf("events/tenants.json: %w", err)
	}
	for _, m := range cost.Mixes {
		if m.Destinations != "" {
			f.Tenants[destinationsTenant] = map[string]json.RawMessage{
				"providers": f.Tenants["demo"]["providers"],
				"outbound":  json.RawMessage(strings.ReplaceAll(m.Destinations, "{url}", url)),
			}
		}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "hookpack-cost")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "tenants.json")
	return path, os.WriteFile(path, b, 0o600)
}

// apiEvent builds the HTTP API event of a signed Stripe delivery to tenantID.
func apiEvent(body string, cfg webhook.Config, tenantID string) (events.APIGatewayV2HTTPRequest, error) {
	u := "https://abc123.execute-api.us-east-1.amazonaws.com/webhooks/" + tenantID + "/stripe"
	req := &webhook.Request{Method: "POST", Tenant: tenantID, Provider: "stripe", Header: http.Header{"Content-Type": {"application/json"}}, Query: url.Values{}, Body: []byte(body), URL: u}
	p, _ := provider.Registry().Lookup("stripe")
	if err := p.(webhook.Signer).Sign(req, cfg, time.Now()); err != nil {
		return events.APIGatewayV2HTTPRequest{}, err
	}
	hr, err := http.NewRequest("POST", u, bytes.NewReader(req.Body))
	if err != nil {
		return events.APIGatewayV2HTTPRequest{}, err
	}
	hr.Header = req.Header
	route := apigw.Route{Methods: []string{"POST"}, Path: "/webhooks/{tenant}/{provider}"}
	params, _ := route.Match(hr.URL.Path)
	return apigw.Event(hr, route, params, time.Now())
}
