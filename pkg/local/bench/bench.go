// Package bench measures the whole local pipeline end to end for
// `make bench-e2e`: signed Stripe deliveries POSTed to the local HTTP API
// (the real ingest handler), the local event source mapping's pollers
// invoking the real worker handler, the ledger on DynamoDB Local, queues on
// moto, and the forward effect received by the local target service. It
// reports webhooks per second sustained, end-to-end latency (POST sent →
// effect received by the target) and the AWS calls made per webhook.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awscount"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Scenario is one row of the table.
type Scenario struct {
	Tenants, Conversations int
	// Webhooks per run, spread round-robin over tenants and conversations.
	Webhooks int
	// Senders is how many deliveries are in flight at once (default 32).
	Senders int
}

// Name is the row label, e.g. "10 tenants × 100 conversations".
func (s Scenario) Name() string {
	return fmt.Sprintf("%d %s × %d %s", s.Tenants, plural(s.Tenants, "tenant"), s.Conversations, plural(s.Conversations, "conversation"))
}

func plural(n int, w string) string {
	if n == 1 {
		return w
	}
	return w + "s"
}

// Scenarios are the rows of docs/performance.md.
var Scenarios = []Scenario{
	{Tenants: 1, Conversations: 1, Webhooks: 300},
	{Tenants: 1, Conversations: 100, Webhooks: 1000},
	{Tenants: 10, Conversations: 100, Webhooks: 2000},
}

// Result is a measured run.
type Result struct {
	Scenario Scenario
	// Elapsed is from the first POST to the last effect received.
	Elapsed  time.Duration
	PerSec   float64
	P50, P99 time.Duration
	// Retried counts POSTs answered 409, 429 or 5xx and sent again.
	Retried int
	// Calls are the AWS requests of the whole pipeline (ingest, pollers,
	// worker) per webhook, by service, empty receives of idle pollers
	// included.
	Calls map[string]float64
}

// Options configure Run.
type Options struct {
	// DynamoDBLocalDir holds an installed DynamoDB Local (make emulators),
	// started for the run unless DynamoDBEndpoint names a running one.
	DynamoDBLocalDir, DynamoDBEndpoint string
	// MotoEndpoint, when set, is a running moto server to use.
	MotoEndpoint string
	// Timeout bounds waiting for the last effect.
	Timeout time.Duration
}

// Run starts a fresh local stack with the scenario's tenants, sends its
// webhooks and waits until the target received every effect.
func Run(ctx context.Context, sc Scenario, o Options) (Result, error) {
	if sc.Senders <= 0 {
		sc.Senders = 32
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	dir, err := os.MkdirTemp("", "hookpack-bench")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	port, err := emulator.FreePort()
	if err != nil {
		return Result{}, err
	}
	targetAddr := fmt.Sprintf("127.0.0.1:%d", port)
	file, secrets, err := tenantsFile(dir, sc.Tenants, targetAddr)
	if err != nil {
		return Result{}, err
	}
	s, err := devstack.Start(ctx, devstack.Options{
		Name: fmt.Sprintf("hookpack-bench-%d", time.Now().UnixNano()%1e6), TenantsFile: file,
		Addr: "127.0.0.1:0", TargetAddr: targetAddr, DynamoDBLocalDir: o.DynamoDBLocalDir,
		DynamoDBEndpoint: o.DynamoDBEndpoint, Endpoint: o.MotoEndpoint,
	})
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	calls := awscount.New()
	s.AWS = calls.Install(s.AWS) // every client Serve builds is counted
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- s.Serve(sctx) }()
	defer func() { stop(); <-served }()
	if err := waitReady(ctx, s.URL()); err != nil {
		return Result{}, err
	}

	// Prepare every delivery first: signing is not what is measured.
	type delivery struct {
		id, tenant string
		body       []byte
		header     http.Header
	}
	run := time.Now().UnixNano()
	ds := make([]delivery, sc.Webhooks)
	for i := range ds {
		t := fmt.Sprintf("bench-%d", i%sc.Tenants)
		id := fmt.Sprintf("evt_b%d_%d", run, i)
		body := fmt.Sprintf(`{"id":%q,"object":"event","type":"invoice.paid","data":{"object":{"id":"in_%d","object":"invoice","customer":"cus_%d","amount_paid":4200,"currency":"usd"}}}`,
			id, i, (i/sc.Tenants)%sc.Conversations)
		req, err := sign(t, []byte(body), secrets[t])
		if err != nil {
			return Result{}, err
		}
		ds[i] = delivery{id: id, tenant: t, body: req.Body, header: req.Header}
	}

	calls.Take() // provisioning and start-up are not the run's
	sent := make([]time.Time, len(ds))
	index := make(map[string]int, len(ds))
	for i, d := range ds {
		index[d.id] = i
	}
	client := &http.Client{Timeout: 30 * time.Second}
	const maxAttempts = 20
	var retried atomic.Int64
	work := make(chan int)
	errc := make(chan error, sc.Senders)
	var wg sync.WaitGroup
	for range sc.Senders {
		wg.Go(func() {
			for i := range work {
				d := ds[i]
				sent[i] = time.Now()
				// Like a provider, retry a 409, 429 or 5xx after
				// a pause; the latency counts from the first POST.
				for attempt := 1; ; attempt++ {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/webhooks/"+d.tenant+"/stripe", bytes.NewReader(d.body))
					req.Header = d.header.Clone()
					resp, err := client.Do(req)
					if err != nil {
						errc <- err
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					retry := resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
					if resp.StatusCode == http.StatusOK {
						break
					}
					if !retry || attempt == maxAttempts {
						errc <- fmt.Errorf("POST %s: %d %s (attempt %d)", d.id, resp.StatusCode, b, attempt)
						return
					}
					retried.Add(1)
					time.Sleep(time.Duration(attempt) * 250 * time.Millisecond)
				}
			}
		})
	}
	start := time.Now()
	go func() {
		defer close(work)
		for i := range ds {
			select {
			case work <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	select {
	case err := <-errc:
		return Result{}, err
	default:
	}

	// Wait for every effect at the target.
	deadline := time.Now().Add(o.Timeout)
	var got []devstack.Applied
	for {
		got = got[:0]
		for _, a := range s.Target.Applied() {
			if _, ok := index[a.EventID]; ok {
				got = append(got, a)
			}
		}
		if len(got) >= len(ds) {
			break
		}
		if time.Now().After(deadline) {
			return Result{}, fmt.Errorf("%s: %d of %d effects arrived within %s", sc.Name(), len(got), len(ds), o.Timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	counted := calls.Take()

	lat := make([]time.Duration, 0, len(got))
	last := start
	for _, a := range got {
		lat = append(lat, a.At.Sub(sent[index[a.EventID]]))
		if a.At.After(last) {
			last = a.At
		}
	}
	slices.Sort(lat)
	r := Result{Scenario: sc, Elapsed: last.Sub(start), P50: percentile(lat, 50), P99: percentile(lat, 99), Calls: map[string]float64{}, Retried: int(retried.Load())}
	r.PerSec = float64(len(ds)) / r.Elapsed.Seconds()
	for k, n := range counted {
		service, _, _ := strings.Cut(k, ".")
		r.Calls[service] += float64(n) / float64(len(ds))
	}
	return r, nil
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// tenantsFile writes a tenants file of n tenants with a Stripe provider and
// the local target as their outbound endpoint, and returns their secrets.
func tenantsFile(dir string, n int, targetAddr string) (string, map[string]webhook.Config, error) {
	f := tenant.File{Tenants: map[string]tenant.FileTenant{}}
	cfgs := map[string]webhook.Config{}
	for i := range n {
		id := fmt.Sprintf("bench-%d", i)
		cfg := webhook.Config{Secrets: []string{fmt.Sprintf("whsec_bench_%d", i)}}
		f.Tenants[id] = tenant.FileTenant{
			Inbound: tenant.Inbound{Providers: map[string]webhook.Config{"stripe": cfg}},
			Outbound: tenant.Outbound{
				TargetURL: "http://" + targetAddr + "/tenants/" + id + "/events",
				Secrets:   []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
			},
		}
		cfgs[id] = cfg
	}
	b, err := json.Marshal(f)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, "tenants.json")
	return path, cfgs, os.WriteFile(path, b, 0o600)
}

// sign signs a Stripe delivery as Stripe would.
func sign(tenantID string, body []byte, cfg webhook.Config) (*webhook.Request, error) {
	req := &webhook.Request{Method: http.MethodPost, Tenant: tenantID, Provider: "stripe",
		Header: http.Header{"Content-Type": {"application/json"}}, Query: url.Values{}, Body: body}
	p, _ := provider.Registry().Lookup("stripe")
	signer, ok := p.(webhook.Signer)
	if !ok {
		return nil, fmt.Errorf("stripe provider cannot sign")
	}
	return req, signer.Sign(req, cfg, time.Now())
}

func waitReady(ctx context.Context, base string) error {
	for range 100 {
		resp, err := http.Get(base + "/webhooks/bench-0/stripe")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("local HTTP API at %s did not answer", base)
}

// Table writes results as a markdown table.
func Table(w io.Writer, rs []Result) {
	fmt.Fprintf(w, "| scenario | webhooks | webhooks/s sustained | p50 | p99 | POSTs retried | AWS calls per webhook |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		services := make([]string, 0, len(r.Calls))
		total := 0.0
		for s, n := range r.Calls {
			services = append(services, fmt.Sprintf("%s %.2f", s, n))
			total += n
		}
		sort.Strings(services)
		fmt.Fprintf(w, "| %s | %d | %.1f | %s | %s | %d | %.2f (%s) |\n", r.Scenario.Name(), r.Scenario.Webhooks, r.PerSec,
			r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Retried, total, strings.Join(services, ", "))
	}
}
