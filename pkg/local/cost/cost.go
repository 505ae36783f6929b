// Package cost prices the pack per million webhooks from measured usage:
// AWS requests counted per webhook, function durations, and log bytes per
// event, at us-east-1 list prices. `make cost` measures the usage on the
// local emulators (scripts/cost) and prints the table this package builds.
package cost

import (
	"fmt"
	"io"
	"sort"
)

// Prices are us-east-1 list prices in USD (first pricing tier, no free
// tier), as published on the AWS pricing pages in 2025–2026. Update them
// here; every figure in docs/cost.md is derived from these values.
type Prices struct {
	HTTPAPIPerMillion         float64 // API Gateway HTTP API, per million requests (≤ 512 KB each)
	LambdaRequestPerMillion   float64 // Lambda, per million invocations
	LambdaArmGBSecond         float64 // Lambda arm64, per GB-second
	DynamoWritePerMillion     float64 // DynamoDB on-demand, per million write request units
	DynamoReadPerMillion      float64 // DynamoDB on-demand, per million read request units
	DynamoStorageGBMonth      float64 // DynamoDB standard storage + PITR, per GB-month
	SQSFIFOPerMillion         float64 // SQS FIFO, per million requests (64 KB chunks)
	SQSStandardPerMillion     float64 // SQS requests FIFO rates do not cover (GetQueueAttributes …), per million
	LogsIngestGB              float64 // CloudWatch Logs ingestion (standard), per GB
	KMSPerTenThousand         float64 // KMS requests (SecureString decryption), per 10,000
	CustomMetricMonth         float64 // CloudWatch custom metric (EMF), per metric-month
	SSMStandardParameterMonth float64 // SSM Parameter Store standard parameter, per month
}

// USEast1 are the prices the pack is budgeted against.
var USEast1 = Prices{
	HTTPAPIPerMillion:         1.00,
	LambdaRequestPerMillion:   0.20,
	LambdaArmGBSecond:         0.0000133334,
	DynamoWritePerMillion:     0.625,
	DynamoReadPerMillion:      0.125,
	DynamoStorageGBMonth:      0.25 + 0.20,
	SQSFIFOPerMillion:         0.50,
	SQSStandardPerMillion:     0.40,
	LogsIngestGB:              0.50,
	KMSPerTenThousand:         0.03,
	CustomMetricMonth:         0.30,
	SSMStandardParameterMonth: 0,
}

// Function is one Lambda function's measured usage per webhook.
type Function struct {
	Name string
	// Invocations per webhook (the worker handles a batch per invocation).
	Invocations float64
	// DurationMs is the mean billed duration of one invocation.
	DurationMs float64
	MemoryMB   float64
}

// Usage is what one accepted webhook costs in requests, time and bytes.
type Usage struct {
	Functions []Function
	// DynamoWrites and DynamoReads are request units per webhook.
	DynamoWrites, DynamoReads float64
	// SQSRequests per webhook (send, receive and delete, amortised over
	// batches).
	SQSRequests float64
	// SQSQueueReads per webhook: GetQueueAttributes (the worker's queue
	// incarnation, about one per invocation), priced at the standard rate.
	SQSQueueReads float64
	// LogBytes per webhook (all functions' log lines).
	LogBytes float64
	// StoredBytes is the DynamoDB item bytes a webhook keeps for the
	// retention window; RetentionDays is that window.
	StoredBytes   float64
	RetentionDays float64
}

// Line is one priced item per million webhooks.
type Line struct {
	Service string
	Detail  string
	USD     float64
}

// PerMillion prices u for one million accepted webhooks.
func PerMillion(p Prices, u Usage) []Line {
	const m = 1e6
	lines := []Line{{"API Gateway HTTP API", "1 request", p.HTTPAPIPerMillion}}
	for _, f := range u.Functions {
		gbs := f.Invocations * m * (f.MemoryMB / 1024) * (f.DurationMs / 1000)
		lines = append(lines,
			Line{"Lambda " + f.Name + " requests", fmt.Sprintf("%.2f invocations", f.Invocations), f.Invocations * p.LambdaRequestPerMillion},
			Line{"Lambda " + f.Name + " compute", fmt.Sprintf("%.0f MB × %.1f ms (arm64)", f.MemoryMB, f.DurationMs), gbs * p.LambdaArmGBSecond},
		)
	}
	// Items written once stay for the retention window: a million
	// webhooks' items cost RetentionDays/30 month of storage.
	storage := u.StoredBytes * m / 1e9 * p.DynamoStorageGBMonth * u.RetentionDays / 30
	lines = append(lines,
		Line{"DynamoDB writes", fmt.Sprintf("%.1f WRU (ingest record + ledger)", u.DynamoWrites), u.DynamoWrites * p.DynamoWritePerMillion},
		Line{"DynamoDB reads", fmt.Sprintf("%.1f RRU (ingest key reads)", u.DynamoReads), u.DynamoReads * p.DynamoReadPerMillion},
		Line{"DynamoDB storage + PITR", fmt.Sprintf("%.0f B for %.0f days", u.StoredBytes, u.RetentionDays), storage},
		Line{"SQS FIFO", fmt.Sprintf("%.2f requests", u.SQSRequests), u.SQSRequests * p.SQSFIFOPerMillion},
		Line{"SQS queue reads", fmt.Sprintf("%.2f GetQueueAttributes", u.SQSQueueReads), u.SQSQueueReads * p.SQSStandardPerMillion},
		Line{"CloudWatch Logs", fmt.Sprintf("%.0f bytes", u.LogBytes), u.LogBytes * m / 1e9 * p.LogsIngestGB},
	)
	return lines
}

// Total sums lines.
func Total(lines []Line) float64 {
	t := 0.0
	for _, l := range lines {
		t += l.USD
	}
	return t
}

// Tenant is the fixed monthly cost of one idle tenant.
type Tenant struct {
	// IdlePollRequestsMonth are the event source mapping's empty long
	// polls on the tenant queue per month.
	IdlePollRequestsMonth float64
	// WatchRunsMonth are the core stack's watch runs per month (every 5
	// minutes); WatchRequestsPerRun the SQS requests each makes for an
	// idle tenant (GetQueueAttributes on its queue and DLQ; pkg/watch's
	// TestWatchOnMoto holds the count); WatchMsPerRun the compute one
	// tenant adds to a run at WatchMemoryMB.
	WatchRunsMonth, WatchRequestsPerRun, WatchMsPerRun, WatchMemoryMB float64
	// Parameters are the tenant's SSM parameters (inbound, outbound).
	Parameters int
}

// DefaultTenant assumes Lambda's SQS poller keeps a handful of 20 s long
// polls open on an idle queue: 5 pollers × 3 per minute × 43,200 minutes;
// and prices the watch's two requests per tenant every 5 minutes, each
// tenant adding 2 ms to a 128 MB run (an assumption: two requests of about
// 10 ms each, 16 tenants at a time, rounded up).
var DefaultTenant = Tenant{IdlePollRequestsMonth: 5 * 3 * 43200, WatchRunsMonth: 43200 / 5, WatchRequestsPerRun: 2, WatchMsPerRun: 2, WatchMemoryMB: 128, Parameters: 2}

// PerTenantMonth prices t.
func PerTenantMonth(p Prices, t Tenant) []Line {
	reads := t.WatchRunsMonth * t.WatchRequestsPerRun
	return []Line{
		{"SQS idle polling", fmt.Sprintf("%.0f empty receives", t.IdlePollRequestsMonth), t.IdlePollRequestsMonth / 1e6 * p.SQSFIFOPerMillion},
		{"Watch queue reads", fmt.Sprintf("%.0f GetQueueAttributes (%.0f per run, %.0f runs)", reads, t.WatchRequestsPerRun, t.WatchRunsMonth), reads / 1e6 * p.SQSStandardPerMillion},
		{"Watch compute", fmt.Sprintf("%.0f MB × %.0f ms per run", t.WatchMemoryMB, t.WatchMsPerRun), t.WatchRunsMonth * t.WatchMsPerRun / 1000 * t.WatchMemoryMB / 1024 * p.LambdaArmGBSecond},
		{"SSM parameters", fmt.Sprintf("%d standard SecureStrings", t.Parameters), float64(t.Parameters) * p.SSMStandardParameterMonth},
	}
}

// Write prints a markdown table of lines with a total, sorted by cost.
func Write(w io.Writer, title string, lines []Line) {
	sorted := append([]Line(nil), lines...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].USD > sorted[j].USD })
	total := Total(lines)
	fmt.Fprintf(w, "| %s | usage | USD | share |\n|---|---|---:|---:|\n", title)
	for _, l := range sorted {
		share := 0.0
		if total > 0 {
			share = 100 * l.USD / total
		}
		fmt.Fprintf(w, "| %s | %s | %.4f | %.1f%% |\n", l.Service, l.Detail, l.USD, share)
	}
	fmt.Fprintf(w, "| **total** | | **%.2f** | |\n", total)
}

// Mix is a workload `make cost` drives through the pipeline.
type Mix struct {
	Name string
	// Webhooks is the number of deliveries sent.
	Webhooks int
	// DuplicateShare of the deliveries repeat an earlier accepted one, as
	// a provider's retry or double send does (same event, same body).
	DuplicateShare float64
	// PerConversation is the number of events of each conversation; the
	// conversations are interleaved, as independent customers' events are.
	PerConversation int
	// Destinations, when set, sends the mix to a tenant with these
	// destinations (tenant.Outbound's JSON, "{url}" standing for the
	// harness's receiver) instead of the demo tenant's one targetUrl, each
	// event reaching PerEvent of them. Such a mix is priced, not held to
	// the budget.
	Destinations string
	PerEvent     int
}

// Mixes are the workloads docs/cost.md prices.
var Mixes = []Mix{
	{Name: "200 webhooks, conversations of 5", Webhooks: 200, PerConversation: 5},
	{Name: "200 webhooks, 30% duplicates, conversations of 10", Webhooks: 200, DuplicateShare: 0.3, PerConversation: 10},
	{Name: "200 webhooks, conversations of 5, three destinations: two select each event (one rated), one none", Webhooks: 200, PerConversation: 5, PerEvent: 2,
		Destinations: `{"destinations": [
		  {"name": "billing", "url": "{url}/billing", "secrets": ["whsec_Y29zdC1kZXN0aW5hdGlvbnMtc2VjcmV0"], "filter": {"events": ["stripe:invoice.*"]}, "rate": "1000/s", "burst": 1000},
		  {"name": "audit", "url": "{url}/audit", "secrets": ["whsec_Y29zdC1kZXN0aW5hdGlvbnMtc2VjcmV0"]},
		  {"name": "ci", "url": "{url}/ci", "secrets": ["whsec_Y29zdC1kZXN0aW5hdGlvbnMtc2VjcmV0"], "filter": {"events": ["github:push"]}}]}`},
}

// Delivery is one webhook of a mix: event Event (numbered from 0 in order
// of first delivery) of conversation Conversation, sent again when
// Duplicate.
type Delivery struct {
	Event, Conversation int
	Duplicate           bool
}

// Deliveries lays the mix out: the accepted events in order, with the
// duplicates spread evenly among them, each repeating an event already sent.
func (m Mix) Deliveries() []Delivery {
	dups := int(float64(m.Webhooks)*m.DuplicateShare + 0.5)
	accepted := m.Webhooks - dups
	per := max(m.PerConversation, 1)
	conversations := max((accepted+per-1)/per, 1)
	out := make([]Delivery, 0, m.Webhooks)
	sent, repeated := 0, 0
	for i := 0; i < m.Webhooks; i++ {
		// A duplicate is due when the duplicates so far fall behind the
		// share of the deliveries so far (and an event exists to repeat).
		if sent > 0 && repeated < dups && float64(repeated+1) <= m.DuplicateShare*float64(i+1)+1e-9 || sent == accepted {
			e := (repeated * 7) % sent
			out = append(out, Delivery{Event: e, Conversation: e % conversations, Duplicate: true})
			repeated++
			continue
		}
		out = append(out, Delivery{Event: sent, Conversation: sent % conversations})
		sent++
	}
	return out
}

// Destinations is how a tenant's destinations change a workload measured
// with one targetUrl (docs/architecture.md, "Streams"). With one
// destination its message is the targetUrl's: its delivery's record is the
// event's (no write more). With two or more, each event is queued as one
// message for its custom effects (done without a write when there are
// none) plus one per destination that selects it, all in the ingest's one
// SendMessageBatch: each of those claims its own ledger record (one
// UpdateItem, 1 WRU) and takes its share of the receives, deletes, worker
// invocations and queue reads, which grow with the messages; the event's
// own record is not written. Each rated destination reserves its slots
// once per worker invocation its messages reach (one UpdateItem, 1 WRU; a
// reservation that meets another invocation's write costs one more, and a
// 429 at most one more), never per message.
type Destinations struct {
	Name string
	// Streams is the tenant's number of destinations; Selected how many of
	// them select an average event; Rated how many rated destinations an
	// average invocation's batch reaches.
	Streams         int
	Selected, Rated float64
	// RecordBytes is a destination record's stored size (the forward's
	// record's, about half of the 400 B an event keeps).
	RecordBytes float64
}

// Messages is how many messages an accepted event is queued as.
func (d Destinations) Messages() float64 {
	if d.Streams < 2 {
		return 1
	}
	return 1 + d.Selected
}

// Apply returns u with d's messages, writes and records: accepted webhooks
// per webhook received and worker invocations per webhook as u was
// measured (one message per accepted event, one SendMessageBatch each).
func (d Destinations) Apply(u Usage, accepted, invocations float64) Usage {
	m := d.Messages()
	u.Functions = append([]Function(nil), u.Functions...)
	for i, f := range u.Functions {
		if f.Name == "worker" {
			u.Functions[i].Invocations *= m
		}
	}
	// Receives and deletes (all but the sends) and queue reads grow with
	// the messages; the sends do not.
	u.SQSRequests += (u.SQSRequests - accepted) * (m - 1)
	u.SQSQueueReads *= m
	u.DynamoWrites += d.Rated * invocations * m
	if d.Streams >= 2 {
		u.DynamoWrites += (d.Selected - 1) * accepted
		u.StoredBytes += (d.Selected - 1) * d.RecordBytes * accepted
	}
	return u
}

// DestinationMixes are the destination layouts docs/cost.md prices on its
// first workload.
var DestinationMixes = []Destinations{
	{Name: "one destination, every event, no rate", Streams: 1, Selected: 1, RecordBytes: 200},
	{Name: "one destination, every event, rated", Streams: 1, Selected: 1, Rated: 1, RecordBytes: 200},
	{Name: "two destinations, every event", Streams: 2, Selected: 2, RecordBytes: 200},
	{Name: "three destinations, every event", Streams: 3, Selected: 3, RecordBytes: 200},
	{Name: "three destinations, two selecting each event, two rated", Streams: 3, Selected: 2, Rated: 2, RecordBytes: 200},
}
