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
	u := Usage{Functions: []Function{{Name: "worker"}}, DynamoWrites: 3, StoredBytes: 400}
	// 70% accepted, a worker invocation per 10 accepted webhooks: two
	// destinations per event claim 1.4 records per webhook received, one
	// rated destination reserves 0.07 times.
	got := Destinations{Selected: 2, Rated: 1, RecordBytes: 200}.Apply(u, 0.7, 0.07)
	if math.Abs(got.DynamoWrites-(3+1.4+0.07)) > 1e-9 || math.Abs(got.StoredBytes-(400+280)) > 1e-9 || u.DynamoWrites != 3 {
		t.Errorf("Apply() = %+v (u %+v), want 4.47 writes and 680 B, u unchanged", got, u)
	}
}
