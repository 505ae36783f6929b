package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/local/awscount"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// nopQueue accepts every send.
type nopQueue struct{}

func (nopQueue) SendBatch(_ context.Context, _ string, msgs []queue.Message) []error {
	return make([]error, len(msgs))
}

// BenchmarkHandlerInMemory is the handler's own overhead per accepted
// request: routing, verification, key, envelope, claim/complete on the
// in-memory store, a no-op queue and the JSON log line.
func BenchmarkHandlerInMemory(b *testing.B) {
	f := newFixture(b)
	f.h.cfg.Queue = nopQueue{}
	f.h.cfg.Logger = slog.New(slog.NewJSONHandler(discard{}, nil))
	reqs := make([]string, b.N)
	for i := range reqs {
		reqs[i] = fmt.Sprint("bench-", i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Each request another event: the key is the signed body's hash.
		req := githubRequest("acme", acmeGitHubSecret, strings.Replace(githubBody, "42", reqs[i][6:], 1), reqs[i])
		b.StartTimer()
		if resp, _ := f.h.Handle(ctx, req); resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkEmulator runs the full handler against moto next to the bare
// sequence of the AWS calls it makes for a single-event delivery: the
// claim's PutItem, one SendMessageBatch of the event's envelope and the
// completion's UpdateItem, made through the same adapters on the same
// kind of event, so items and message are the handler's byte for byte (a
// request counter checks both sides made the same calls). It reports each
// side's median latency and their ratio, handler/bare: what the handler
// adds to the AWS calls users wait for.
//
// Budget: handler/bare ≤ 1.10. Measured on moto: 0.99 (0.97–1.05 over 6
// interleaved runs of 200): the handler adds its own work, about 50 µs
// (BenchmarkHandlerInMemory), to some 17 ms of AWS calls. Compare runs with
//
//	go test -run '^$' -bench BenchmarkEmulator -benchtime 200x -count 6 ./pkg/ingest | tee bench.txt
//	benchstat bench.txt
func BenchmarkEmulator(b *testing.B) {
	ctx := context.Background()
	gh := webhook.Config{Secrets: []string{acmeGitHubSecret}}
	e := emulate(b, awstest.Moto(b), 3, map[string]tenant.Inbound{"acme": {Providers: map[string]webhook.Config{"github": gh}}})
	cfg, name, pair := e.cfg, e.name, e.pair
	handlerCalls, bareCalls := awscount.New(), awscount.New()
	// The tenant list and credentials are loaded once (warm-up): their
	// refreshes are amortised over minutes of traffic, not per request.
	settings := e.settings()
	settings.TenantCacheTTL, settings.TenantListRefresh = time.Hour, time.Hour
	h := NewAWS(handlerCalls.Install(cfg), settings, slog.New(slog.DiscardHandler))
	bareCfg := bareCalls.Install(cfg)
	claims := idempotency.NewDynamoDB(dynamodb.NewFromConfig(bareCfg), name, idempotency.Options{})
	q := queue.NewSQS(sqs.NewFromConfig(bareCfg))
	gp, _ := h.cfg.Providers.Lookup("github")

	// request returns a delivery of event n: its body, so its key, is n's
	// (GitHub events are keyed by the body's hash).
	request := func(n int) events.APIGatewayV2HTTPRequest {
		id := strconv.Itoa(n)
		return githubRequest("acme", acmeGitHubSecret, strings.Replace(githubBody, "42", id, 1), "d-"+id)
	}
	// bareEvent is what the handler would queue for req: the same provider
	// parsing and envelope (Handler.messages).
	bareEvent := func(req events.APIGatewayV2HTTPRequest) pending {
		wreq, err := webhookRequest(&req, "acme", "github", []byte(req.Body))
		if err != nil {
			b.Fatal(err)
		}
		evs, err := gp.Events(wreq, gh)
		if err != nil {
			b.Fatal(err)
		}
		msgs, err := h.messages("acme", "github", tenant.Routes{}, evs, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		return msgs[0]
	}
	if resp, _ := h.Handle(ctx, request(-1)); resp.StatusCode != 200 { // loads credentials, opens connections
		b.Fatalf("warm-up: status %d %s", resp.StatusCode, resp.Body)
	}
	handlerCalls.Take()

	// Handler and bare alternate within one loop, taking turns to go
	// first, so both see the emulator in the same state (its latency grows
	// with its contents) and the same load from the rest of the machine.
	handlerDur, bareDur := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	timed := func(into *[]time.Duration, f func()) {
		start := time.Now()
		f()
		*into = append(*into, time.Since(start))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, m := request(2*i), bareEvent(request(2*i+1))
		handler := func() {
			if resp, _ := h.Handle(ctx, req); resp.StatusCode != 200 {
				b.Fatalf("status %d %s", resp.StatusCode, resp.Body)
			}
		}
		bare := func() {
			if err := claims.Check(ctx, m.key, m.validation); err != nil {
				b.Fatal(err)
			}
			if err := q.SendBatch(ctx, pair.URL, []queue.Message{m.msg})[0]; err != nil {
				b.Fatal(err)
			}
			if err := claims.Complete(ctx, m.key, m.validation); err != nil {
				b.Fatal(err)
			}
		}
		if i%2 == 0 {
			timed(&handlerDur, handler)
			timed(&bareDur, bare)
		} else {
			timed(&bareDur, bare)
			timed(&handlerDur, handler)
		}
	}
	b.StopTimer()
	if hc, bc := handlerCalls.Take(), bareCalls.Take(); !maps.Equal(hc, bc) {
		b.Fatalf("AWS requests: handler %v, bare %v, want the same", hc, bc)
	}
	// Medians, not means: a machine shared with other work adds outliers
	// to either side at random.
	hp50, bp50 := p50(handlerDur), p50(bareDur)
	b.ReportMetric(float64(hp50.Microseconds())/1000, "handler-p50-ms")
	b.ReportMetric(float64(bp50.Microseconds())/1000, "bare-p50-ms")
	b.ReportMetric(float64(hp50)/float64(bp50), "handler/bare")
}

func p50(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
