package chaos

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

// TestShortRun is `make chaos` in miniature: 1,000 deliveries with every
// fault kind injected at least once; the pack must lose, double and reorder
// nothing. SEED replays another schedule.
func TestShortRun(t *testing.T) {
	seed := uint64(20261123)
	if s := os.Getenv("SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SEED=%q: %v", s, err)
		}
		seed = n
	}
	rates := DefaultRates()
	// A short run sees the rarer faults only at higher rates.
	for _, k := range []Kind{WorkerDiesMidEffect, WorkerDiesBeforeAck, VisibilityExpires, Poison} {
		rates[k] = 0.03
	}
	r, err := Run(context.Background(), Options{
		Seed: seed, Deliveries: 1000, Conversations: 100, Rates: rates, Concurrency: 16, DrainTimeout: 3 * time.Minute,
		Endpoint: awstest.Moto(t), DynamoDBEndpoint: awstest.DynamoDBLocal(t),
		TemplateFile: awstest.ModuleRoot() + "/template.yaml",
	})
	if err != nil {
		t.Fatalf("Run(seed %d) = %v", seed, err)
	}
	var table strings.Builder
	r.Write(&table)
	t.Logf("chaos run, seed %d:\n%s", seed, table.String())
	if r.Failed() {
		t.Errorf("the pack broke a promise under faults (replay: SEED=%d go test -run TestShortRun ./pkg/local/chaos/)", seed)
	}
	for _, k := range Kinds {
		if r.Faults[k] == 0 {
			t.Errorf("fault %q was never injected", k)
		}
	}
	if r.Large == 0 {
		t.Error("no event over 1 MiB: the S3 path went untested")
	}
	if r.Deliveries < 1000 || r.Unique < 600 {
		t.Errorf("sent %d deliveries of %d events, want ≥ 1,000 with 30%% duplicates", r.Deliveries, r.Unique)
	}
}
