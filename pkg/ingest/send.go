package ingest

import (
	"context"
	"errors"

	"github.com/hookpack/hookpack/pkg/internal/deadline"
	"github.com/hookpack/hookpack/pkg/queue"
)

// send sends the messages of msgs[idx] (each event's, its streams' too)
// and returns an error per index of msgs (nil when all of the event's
// messages are queued): up to sendRounds calls of SendBatch, each round
// sending again, in delivery order, the events the last one failed with a
// retryable error (SendBatch keeps each group in order, and the entries it
// held back behind one that cannot be queued carry that entry's error; an
// event's messages already queued are sent again under the same
// deduplication ids, which SQS drops). An event's messages go in one call
// (ten groups per call): one SendMessageBatch however many streams it has.
// Each call is bounded by deadline.HalfLeft and all by ctx.
func (h *Handler) send(ctx context.Context, url string, msgs []pending, idx []int) []error {
	errs := make([]error, len(msgs))
	for round := 0; len(idx) > 0; round++ {
		var batch []queue.Message
		var of []int // the event of each message of batch
		for _, i := range idx {
			for _, m := range append([]queue.Message{msgs[i].msg}, msgs[i].streams...) {
				batch, of = append(batch, m), append(of, i)
			}
		}
		cctx, cancel := deadline.HalfLeft(ctx)
		out := h.cfg.Queue.SendBatch(cctx, url, batch)
		cancel()
		for _, i := range idx {
			errs[i] = nil
		}
		for j, i := range of {
			if errs[i] == nil {
				errs[i] = out[j]
			}
		}
		var again []int
		for _, i := range idx {
			if errs[i] != nil && !errors.Is(errs[i], queue.ErrTooLarge) && !errors.Is(errs[i], queue.ErrEntryRejected) {
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
