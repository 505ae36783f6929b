// Command cost is `make cost`: it measures what one accepted webhook costs
// on the local emulators — AWS requests counted by an SDK middleware, the
// handlers' durations, and the bytes of their log lines — for the whole
// path (ingest, queue, worker, forward effect to a target), then prices it
// per million webhooks at us-east-1 list prices (package cost) and writes
// the tables to stdout (and to -out, default docs/cost.md).
//
// Durations are measured against moto on this machine, whose latency is of
// the same order as DynamoDB and SQS inside a region; -ingest-ms and
// -worker-ms override them with figures observed in AWS.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/ingest"
	"github.com/hookpack/hookpack/pkg/local/apigw"
	"github.com/hookpack/hookpack/pkg/local/awscount"
	"github.com/hookpack/hookpack/pkg/local/cost"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/webhook"
	"github.com/hookpack/hookpack/pkg/worker"
)

func main() {
	n := flag.Int("n", 200, "webhooks to send")
	out := flag.String("out", "docs/cost.md", "markdown file to write (empty: stdout only)")
	ingestMs := flag.Float64("ingest-ms", 0, "override the measured ingest duration (ms)")
	workerMs := flag.Float64("worker-ms", 0, "override the measured worker duration per invocation (ms)")
	flag.Parse()
	if err := run(*n, *out, *ingestMs, *workerMs); err != nil {
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

func run(n int, outFile string, ingestOverride, workerOverride float64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	port, err := emulator.FreePort()
	if err != nil {
		return err
	}
	targetAddr := fmt.Sprintf("127.0.0.1:%d", port)
	dir, err := os.MkdirTemp("", "hookpack-cost")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tenants, err := devstack.RetargetTenantsFile("events/tenants.json", dir, targetAddr)
	if err != nil {
		return err
	}
	s, err := devstack.Start(ctx, devstack.Options{Name: "hookpack-cost", TenantsFile: tenants, Addr: "127.0.0.1:0", TargetAddr: targetAddr, ManualWorker: true, DynamoDBLocalDir: ".cache/dynamodb-local"})
	if err != nil {
		return err
	}
	defer s.Close()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = s.Serve(sctx) }() // the target service

	ingestReqs, workerReqs := awscount.New(), awscount.New()
	ingestLog, workerLog := &byteCounter{}, &byteCounter{}
	ih := ingest.NewAWS(ingestReqs.Install(s.AWS), s.Settings, slog.New(slog.NewJSONHandler(ingestLog, nil)))
	wh := worker.NewAWS(workerReqs.Install(s.AWS), s.Worker, slog.New(slog.NewJSONHandler(workerLog, nil)))
	cfg := s.Tenants.Tenants["demo"].Providers["stripe"]

	// Ingest: n Stripe events for n/5 customers, signed, as API Gateway
	// delivers them.
	var ingestDur time.Duration
	for i := 0; i < n; i++ {
		body := fmt.Sprintf(`{"id":"evt_cost_%d_%d","object":"event","type":"invoice.paid","data":{"object":{"id":"in_%d","object":"invoice","customer":"cus_%d","amount_paid":4200,"currency":"usd"}}}`, time.Now().UnixNano(), i, i, i%(n/5+1))
		ev, err := apiEvent(body, cfg)
		if err != nil {
			return err
		}
		start := time.Now()
		resp, _ := ih.Handle(ctx, ev)
		ingestDur += time.Since(start)
		if resp.StatusCode != 200 {
			return fmt.Errorf("ingest answered %d %s", resp.StatusCode, resp.Body)
		}
	}

	// Worker: drain the queue the way the event source mapping does.
	sq := sqs.NewFromConfig(workerReqs.Install(s.AWS))
	var workerDur time.Duration
	invocations, processed := 0, 0
	for empty := 0; processed < n && empty < 20; {
		ev, err := esm.Receive(ctx, sq, s.Queues["demo"].URL, esm.ReceiveOptions{})
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
		workerDur += time.Since(start)
		wcancel()
		if err != nil {
			return err
		}
		if err := esm.Settle(ctx, sq, s.Queues["demo"].URL, ev, resp); err != nil {
			return err
		}
		invocations++
		processed += len(ev.Records) - len(resp.BatchItemFailures)
	}
	if applied := len(s.Target.Applied()); applied != n {
		return fmt.Errorf("target applied %d of %d effects", applied, n)
	}

	perWebhook := func(x int) float64 { return float64(x) / float64(n) }
	im := float64(ingestDur.Microseconds()) / 1000 / float64(n)
	wm := float64(workerDur.Microseconds()) / 1000 / float64(invocations)
	if ingestOverride > 0 {
		im = ingestOverride
	}
	if workerOverride > 0 {
		wm = workerOverride
	}
	u := cost.Usage{
		Functions: []cost.Function{
			{Name: "ingest", Invocations: 1, DurationMs: im, MemoryMB: 256},
			{Name: "worker", Invocations: perWebhook(invocations), DurationMs: wm, MemoryMB: 256},
		},
		DynamoWrites: perWebhook(ingestReqs.Sum("DynamoDB", "PutItem", "UpdateItem", "DeleteItem") +
			workerReqs.Sum("DynamoDB", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")*1),
		DynamoReads:   perWebhook(workerReqs.Sum("DynamoDB", "GetItem", "Query")),
		SQSRequests:   perWebhook(ingestReqs.Sum("SQS", "SendMessage", "SendMessageBatch") + workerReqs.Sum("SQS", "ReceiveMessage", "DeleteMessageBatch", "DeleteMessage", "ChangeMessageVisibility", "SendMessage")),
		LogBytes:      perWebhook(ingestLog.n + workerLog.n),
		StoredBytes:   400,
		RetentionDays: 7,
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Cost per million webhooks\n\nGenerated by `make cost` on %s from %d Stripe webhooks through the whole local pipeline\n", time.Now().UTC().Format("2006-01-02"), n)
	fmt.Fprintf(&b, "(ingest → SQS FIFO → worker → ledger → signed forward to a target), us-east-1 list prices (pkg/local/cost).\n\n")
	fmt.Fprintf(&b, "Measured per webhook: ingest %d DynamoDB + %d SQS requests, worker %d DynamoDB writes; SSM GetParameter %d (ingest) + %d (worker) in all (credential cache); ",
		ingestReqs.Sum("DynamoDB", "PutItem", "UpdateItem")/n, ingestReqs.Sum("SQS", "SendMessage", "SendMessageBatch")/n,
		workerReqs.Sum("DynamoDB", "PutItem", "UpdateItem", "TransactWriteItems")/n,
		ingestReqs.Sum("SSM", "GetParameter"), workerReqs.Sum("SSM", "GetParameter"))
	fmt.Fprintf(&b, "%.1f messages per worker invocation; ingest %.1f ms, worker %.1f ms per invocation; %.0f log bytes.\n\n",
		float64(n)/float64(invocations), im, wm, u.LogBytes)
	cost.Write(&b, "per million accepted webhooks", cost.PerMillion(cost.USEast1, u))
	fmt.Fprintf(&b, "\nFixed cost per tenant per month (idle):\n\n")
	cost.Write(&b, "per tenant-month", cost.PerTenantMonth(cost.USEast1, cost.DefaultTenant))
	fmt.Fprintf(&b, "\nAWS requests counted (all %d webhooks): ingest %v; worker %v.\n", n, ingestReqs.Counts(), workerReqs.Counts())
	total := cost.Total(cost.PerMillion(cost.USEast1, u))
	fmt.Fprintf(&b, "\n## Against the $4.00 budget\n\nTotal $%.2f per million: ", total)
	if total <= 4 {
		fmt.Fprintf(&b, "within budget.\n")
	} else {
		fmt.Fprintf(&b, "over by $%.2f (%.0f%%). DynamoDB writes dominate: the ingest claim and its completion (2 WRU) and the worker's fence, claim and completion (3 WRU) are each a single-item conditional write, already the minimum for the guarantees they carry.\n", total-4, 100*(total-4)/4)
	}
	lever := func(name string, v cost.Usage, p cost.Prices) {
		t := cost.Total(cost.PerMillion(p, v))
		fmt.Fprintf(&b, "| %s | %.2f | −%.2f |\n", name, t, total-t)
	}
	fmt.Fprintf(&b, "\nWhat would cut it further (recomputed with the same model):\n\n| change | USD per million | saving |\n|---|---:|---:|\n")
	seq := u
	seq.DynamoWrites--
	lever("worker fence from the SQS FIFO SequenceNumber instead of a counter write (pkg/ledger doc: 2 WRU per message)", seq, cost.USEast1)
	logs := u
	logs.LogBytes /= 2
	lever("half the log bytes (EMF aggregated per batch, shorter keys)", logs, cost.USEast1)
	prov := cost.USEast1
	prov.DynamoWritePerMillion = 0.00065 / 3600 / 0.7 * 1e6 // provisioned WCU-hour at 70% utilisation
	lever("DynamoDB provisioned capacity with auto scaling at 70% utilisation (steady traffic)", u, prov)
	all := seq
	all.LogBytes /= 2
	lever("all three", all, prov)
	if _, err := io.Copy(os.Stdout, bytes.NewReader(b.Bytes())); err != nil {
		return err
	}
	if outFile != "" {
		if err := os.MkdirAll(filepath.Dir(outFile), 0o755); err != nil {
			return err
		}
		return os.WriteFile(outFile, b.Bytes(), 0o644)
	}
	return nil
}

// apiEvent builds the HTTP API event of a signed Stripe delivery.
func apiEvent(body string, cfg webhook.Config) (events.APIGatewayV2HTTPRequest, error) {
	u := "https://abc123.execute-api.us-east-1.amazonaws.com/webhooks/demo/stripe"
	req := &webhook.Request{Method: "POST", Tenant: "demo", Provider: "stripe", Header: http.Header{"Content-Type": {"application/json"}}, Query: url.Values{}, Body: []byte(body), URL: u}
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
