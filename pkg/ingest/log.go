package ingest

import (
	"context"
	"log/slog"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// log writes the request's one line: fixed keys, no secrets, signatures or
// bodies, at most MaxLogLineBytes for a single-event delivery (the line is
// most of what logging costs per webhook). It carries no EMF block: the
// Webhooks and IngestDuration metrics come from metric filters on this
// line (template.yaml), and the idempotency key is tenantId#provider#eventId.
func (h *Handler) log(ctx context.Context, res *result, out outcome, status int, start time.Time) {
	attrs := []any{
		slog.String("tenantId", webhook.Truncate(res.tenant, maxPathValueBytes)),
		slog.String("provider", webhook.Truncate(res.provider, maxPathValueBytes)),
		slog.String("outcome", string(out)),
		slog.Int("status", status),
		slog.Float64("durationMs", float64(h.cfg.Now().Sub(start).Microseconds())/1000),
	}
	if len(res.events) > 0 {
		attrs = append(attrs, slog.String("eventId", res.events[0].ID))
		if len(res.events) > 1 {
			ids := make([]string, len(res.events))
			for i, e := range res.events {
				ids[i] = e.ID + "=" + string(e.Outcome)
			}
			attrs = append(attrs, slog.Int("events", len(res.events)), slog.Any("eventIds", ids))
		}
	}
	for _, e := range res.events {
		if e.Outcome == outReused { // digests only: never the body
			attrs = append(attrs, slog.String("payloadDigest", e.digest), slog.String("storedDigest", e.stored))
			break
		}
	}
	level := slog.LevelInfo
	if out == outReused {
		level = slog.LevelWarn
	}
	if res.err != nil {
		attrs = append(attrs, slog.String("error", res.err.Error()))
		if status >= 500 {
			level = slog.LevelError
		}
	}
	h.cfg.Logger.Log(ctx, level, "webhook", attrs...)
}

// maxPathValueBytes bounds the tenant and provider path segments as logged:
// anyone can send a long one, and every byte logged is billed.
const maxPathValueBytes = 64

// MaxLogLineBytes is the budget of the one log line of an accepted
// single-event webhook with an event id of up to 64 bytes (CloudWatch Logs
// bills every byte ingested).
const MaxLogLineBytes = 300
