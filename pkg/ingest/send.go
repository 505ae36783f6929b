package ingest

import (
	"context"
	"errors"

	"github.com/hookpack/hookpack/pkg/internal/deadline"
	"github.com/hookpack/hookpack/pkg/queue"
)

// send sends msgs[idx] and returns an error per index of msgs (nil when
// queued): up to sendRounds calls of SendBatch, each round sending again,
// in delivery order, the entries the last one failed with a retryable error
// (SendBatch keeps each conversation in order, and the entries it held
// back behind one that cannot be queued carry that entry's error). Each
// call is bounded by deadline.HalfLeft and all by ctx.
func (h *Handler) send(ctx context.Context, url string, msgs []pending, idx []int) []error {
	errs := make([]error, len(msgs))
	for round := 0; len(idx) > 0; round++ {
		batch := make([]queue.Message, len(idx))
		for j, i := range idx {
			batch[j] = msgs[i].msg
		}
		cctx, cancel := deadline.HalfLeft(ctx)
		out := h.cfg.Queue.SendBatch(cctx, url, batch)
		cancel()
		var again []int
		for j, i := range idx {
			errs[i] = out[j]
			if out[j] != nil && !errors.Is(out[j], queue.ErrTooLarge) && !errors.Is(out[j], queue.ErrEntryRejected) {
				again = append(again, i)
			}
		}
		if round+1 == sendRounds || ctx.Err() != nil {
			break
		}
		idx = again
	}
	return errs
}
