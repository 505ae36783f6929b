package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

// TestRunSmall drives a few webhooks through the whole local pipeline
// (make bench-e2e runs the full scenarios): every effect arrives, and the
// row reports a rate, latencies and AWS calls.
func TestRunSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sc := Scenario{Tenants: 2, Conversations: 3, Webhooks: 12, Senders: 4}
	r, err := Run(ctx, sc, Options{DynamoDBEndpoint: awstest.DynamoDBLocal(t), MotoEndpoint: awstest.Moto(t), Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if r.PerSec <= 0 || r.P50 <= 0 || r.P99 < r.P50 || r.Elapsed <= 0 {
		t.Errorf("result = %+v, want a rate and p50 ≤ p99", r)
	}
	// Each accepted webhook costs at least ingest's claim, send and
	// completion and the worker's claim.
	if r.Calls["DynamoDB"] < 3 || r.Calls["SQS"] < 1 {
		t.Errorf("AWS calls per webhook = %v, want ≥ 3 DynamoDB and ≥ 1 SQS", r.Calls)
	}
	var b bytes.Buffer
	Table(&b, []Result{r})
	if !strings.Contains(b.String(), "| 2 tenants × 3 conversations | 12 |") || !strings.Contains(b.String(), "POSTs retried") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var out []time.Duration
		for _, x := range n {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 99, 4 * time.Millisecond},
		{ms(7), 99, 7 * time.Millisecond},
		{nil, 50, 0},
	}
	for _, tt := range tests {
		if got := percentile(tt.in, tt.p); got != tt.want {
			t.Errorf("percentile(%v, %d) = %v, want %v", tt.in, tt.p, got, tt.want)
		}
	}
}
