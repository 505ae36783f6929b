package chaos

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

// TestShortRun is `make chaos` in miniature: 1,000 deliveries with every
// fault kind injected at least once; the pack must lose, double, reorder
// and let expire nothing. SEED replays another schedule.
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
	for _, k := range []Kind{WorkerDiesMidEffect, WorkerDiesBeforeAck, VisibilityExpires, Poison, EffectHangs, DeletionLost, InvokedTwice} {
		rates[k] = 0.03
	}
	rates[RedrivenAfterCrash] = 0.06
	logger := slog.New(slog.DiscardHandler)
	if path := os.Getenv("CHAOS_LOG"); path != "" { // the functions' log lines, for a failing seed
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		logger = slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	r, err := Run(context.Background(), Options{
		Logger: logger,
		Seed:   seed, Deliveries: 1000, Conversations: 100, Rates: rates, Concurrency: 16, DrainTimeout: 4 * time.Minute,
		// A few dozen deliveries a phase: its latencies are printed, not
		// judged (Report.judged).
		Phase:    25 * time.Second,
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
	for name, n := range map[string]int{"lost": len(r.Lost), "expired": len(r.Expired), "doubled": len(r.Doubled), "order violations": len(r.Violations)} {
		if n != 0 {
			t.Errorf("%s = %d, want 0", name, n)
		}
	}
	if r.Large == 0 {
		t.Error("no event over 1 MiB: the S3 path went untested")
	}
	if r.Deliveries < 1000 || r.Unique < 600 {
		t.Errorf("sent %d deliveries of %d events, want ≥ 1,000 with 30%% duplicates", r.Deliveries, r.Unique)
	}
}
