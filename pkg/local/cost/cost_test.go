package cost

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestPerMillion(t *testing.T) {
	u := Usage{
		Functions:    []Function{{Name: "ingest", Invocations: 1, DurationMs: 20, MemoryMB: 256}},
		DynamoWrites: 2, SQSRequests: 1, SQSQueueReads: 0.1, LogBytes: 1000, StoredBytes: 200, RetentionDays: 30,
	}
	lines := PerMillion(USEast1, u)
	want := map[string]float64{
		"API Gateway HTTP API":    1.00,
		"Lambda ingest requests":  0.20,
		"Lambda ingest compute":   1e6 * 0.25 * 0.02 * 0.0000133334, // 5,000 GB-s
		"DynamoDB writes":         2 * 0.625,
		"SQS FIFO":                0.50,
		"SQS queue reads":         0.1 * 0.40,
		"CloudWatch Logs":         1e9 / 1e9 * 0.50, // 1 GB
		"DynamoDB storage + PITR": 0.2 * 0.45,       // 0.2 GB for one month
	}
	got := map[string]float64{}
	for _, l := range lines {
		got[l.Service] = l.USD
	}
	for k, v := range want {
		if math.Abs(got[k]-v) > 1e-9 {
			t.Errorf("%s = %.6f, want %.6f", k, got[k], v)
		}
	}
	var buf bytes.Buffer
	Write(&buf, "per million", lines)
	if !strings.Contains(buf.String(), "**total**") || !strings.HasPrefix(strings.Split(buf.String(), "\n")[2], "| DynamoDB writes") {
		t.Errorf("table not sorted by cost:\n%s", buf.String())
	}
}

func TestPerTenantMonth(t *testing.T) {
	lines := PerTenantMonth(USEast1, DefaultTenant)
	// Empty receives, two GetQueueAttributes per 5-minute watch run, 2 ms of a 128 MB run.
	want := 648000/1e6*0.5 + 2*8640/1e6*0.4 + 8640*0.002*0.125*0.0000133334
	if got := Total(lines); math.Abs(got-want) > 1e-9 || got > 0.35 {
		t.Errorf("per tenant = %.6f, want %.6f (at most $0.35)", got, want)
	}
}

func TestMixDeliveries(t *testing.T) {
	for _, m := range Mixes {
		t.Run(m.Name, func(t *testing.T) {
			ds := m.Deliveries()
			if len(ds) != m.Webhooks {
				t.Fatalf("%d deliveries, want %d", len(ds), m.Webhooks)
			}
			seen := map[int]bool{}
			perConv := map[int]map[int]bool{}
			dups := 0
			for i, d := range ds {
				switch {
				case d.Duplicate && !seen[d.Event]:
					t.Fatalf("delivery %d repeats event %d before it was sent", i, d.Event)
				case !d.Duplicate && seen[d.Event]:
					t.Fatalf("delivery %d sends event %d twice as new", i, d.Event)
				}
				if d.Duplicate {
					dups++
				}
				seen[d.Event] = true
				if perConv[d.Conversation] == nil {
					perConv[d.Conversation] = map[int]bool{}
				}
				perConv[d.Conversation][d.Event] = true
			}
			if want := int(float64(m.Webhooks)*m.DuplicateShare + 0.5); dups != want {
				t.Errorf("%d duplicates, want %d", dups, want)
			}
			for c, evs := range perConv {
				if len(evs) != m.PerConversation {
					t.Errorf("conversation %d has %d events, want %d", c, len(evs), m.PerConversation)
				}
			}
		})
	}
}

func TestDestinationsApply(t *testing.T) {
	// Measured with one targetUrl: 70% accepted, one send per accepted
	// webhook and 0.14 receives and deletes, a worker invocation per 10
	// accepted webhooks.
	u := Usage{Functions: []Function{{Name: "ingest", Invocations: 1}, {Name: "worker", Invocations: 0.07}},
		DynamoWrites: 2.1, SQSRequests: 0.84, SQSQueueReads: 0.07, StoredBytes: 280}
	tests := []struct {
		d                                  Destinations
		writes, sqs, reads, worker, stored float64
	}{
		// One destination: its message and record are the targetUrl's.
		{Destinations{Streams: 1, Selected: 1, RecordBytes: 200}, 2.1, 0.84, 0.07, 0.07, 280},
		// Rated: a reservation per invocation.
		{Destinations{Streams: 1, Selected: 1, Rated: 1, RecordBytes: 200}, 2.17, 0.84, 0.07, 0.07, 280},
		// Three selecting each event: four messages (the effects' one),
		// three records instead of the event's one, in the same send.
		{Destinations{Streams: 3, Selected: 3, RecordBytes: 200}, 2.1 + 1.4, 0.84 + 0.14*3, 0.28, 0.28, 280 + 280},
	}
	for _, tt := range tests {
		got := tt.d.Apply(u, 0.7, 0.07)
		if math.Abs(got.DynamoWrites-tt.writes) > 1e-9 || math.Abs(got.SQSRequests-tt.sqs) > 1e-9 || math.Abs(got.SQSQueueReads-tt.reads) > 1e-9 ||
			math.Abs(got.Functions[1].Invocations-tt.worker) > 1e-9 || math.Abs(got.StoredBytes-tt.stored) > 1e-9 {
			t.Errorf("%+v.Apply() = %+v, want %.2f writes, %.2f SQS requests, %.2f queue reads, %.2f worker invocations, %.0f B", tt.d, got, tt.writes, tt.sqs, tt.reads, tt.worker, tt.stored)
		}
	}
	if u.DynamoWrites != 2.1 || u.Functions[1].Invocations != 0.07 {
		t.Errorf("Apply changed its argument: %+v", u)
	}
}

// TestDestinationBudgets holds issue 43's budgets on a usage like the
// first workload's (docs/cost.md): one destination costs what a targetUrl
// does, and each further destination that selects every event adds its
// ledger write and its share of the messages (reported, see cost.md).
func TestDestinationBudgets(t *testing.T) {
	u := Usage{Functions: []Function{{Name: "ingest", Invocations: 1, DurationMs: 17.1, MemoryMB: 256}, {Name: "worker", Invocations: 0.1, DurationMs: 42.4, MemoryMB: 256}},
		DynamoWrites: 3, SQSRequests: 1.2, SQSQueueReads: 0.1, LogBytes: 262, StoredBytes: 400, RetentionDays: 7}
	price := func(d Destinations) float64 { return Total(PerMillion(USEast1, d.Apply(u, 1, 0.1))) }
	base := Total(PerMillion(USEast1, u))
	if one := price(Destinations{Streams: 1, Selected: 1, RecordBytes: 200}); one > base+1e-9 {
		t.Errorf("one destination = %.4f, a targetUrl %.4f: want no more", one, base)
	}
	two, three := price(Destinations{Streams: 2, Selected: 2, RecordBytes: 200}), price(Destinations{Streams: 3, Selected: 3, RecordBytes: 200})
	if further := three - two; further < USEast1.DynamoWritePerMillion || further > 0.85 {
		t.Errorf("a further destination adds %.4f, want its write (%.3f) plus its share of the messages, under 0.85", further, USEast1.DynamoWritePerMillion)
	}
}
