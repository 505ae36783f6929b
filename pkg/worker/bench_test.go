package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/worker"
)

// BenchmarkBatch holds the concurrency budget: a batch of 10 messages whose
// effect takes 20 ms must finish at least 5× faster spread over 10 groups
// (run concurrently) than in one group (run in order). Compare
//
//	go test -run '^$' -bench BenchmarkBatch -count 6 ./pkg/worker | tee bench.txt
//	benchstat bench.txt
//
// ms/batch of groups=1 (≈ 200) against groups=10 (≈ 20).
func BenchmarkBatch(b *testing.B) {
	for _, groups := range []int{1, 10} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) {
			f := newFixture(b, nil)
			f.reg.Handle(worker.Any, worker.Any, func(ctx context.Context, ev *worker.Event) error {
				return ev.Once(ctx, "effect", func(context.Context, string) error {
					time.Sleep(20 * time.Millisecond)
					return nil
				})
			})
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				envs := make([]*envelope.Envelope, 10)
				for n := range envs {
					envs[n] = env(fmt.Sprintf("%d-%d", i, n), fmt.Sprintf("G%d", n%groups))
				}
				resp, _ := f.h.Handle(ctx, batch(b, envs...))
				if len(resp.BatchItemFailures) != 0 {
					b.Fatalf("failures: %v", failed(resp))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/batch")
		})
	}
}
