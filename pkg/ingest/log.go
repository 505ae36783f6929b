package ingest

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// log writes the request's one line: fixed keys, no secrets, signatures or
// bodies, at most MaxLogLineBytes for a single-event delivery (the line is
// most of what logging costs per webhook). It carries no EMF block: the
// Webhooks and IngestDuration metrics come from metric filters on this
// line (template.yaml). The idempotency key is tenantId#provider#eventId,
// or tenantId#provider#dedupId when the sender's id is not signed (GitHub's
// X-GitHub-Delivery, Shopify's event id, …) and the key is a content hash:
// the line then carries dedupId, so that the id an operator holds finds the
// event's key in the log (scripts/inspect) without another write.
func (h *Handler) log(ctx context.Context, res *result, out outcome, status int, start time.Time) {
	attrs := []any{
		slog.String("tenantId", webhook.Truncate(res.tenant, maxPathValueBytes)),
		slog.String("provider", webhook.Truncate(res.provider, maxPathValueBytes)),
		slog.String("outcome", string(out)),
		slog.Int("status", status),
		slog.Float64("durationMs", float64(h.cfg.Now().Sub(start).Microseconds())/1000),
	}
	if len(res.events) > 0 {
		first := res.events[0]
		attrs = append(attrs, slog.String("eventId", first.ID))
		if d := dedupID(res, first); d != "" && len(res.events) == 1 {
			attrs = append(attrs, slog.String("dedupId", d))
		}
		if len(res.events) > 1 {
			ids := make([]string, len(res.events))
			for i, e := range res.events {
				ids[i] = e.ID + "=" + string(e.Outcome)
				if d := dedupID(res, e); d != "" {
					ids[i] += "=" + d
				}
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

// dedupID returns the id part of e's idempotency key when it is not e.ID
// (a content hash standing for an unsigned sender id), else "".
func dedupID(res *result, e eventResult) string {
	d := strings.TrimPrefix(e.Key, res.tenant+"#"+res.provider+"#")
	if e.Key == "" || d == e.ID || d == e.Key {
		return ""
	}
	return d
}

// maxPathValueBytes bounds the tenant and provider path segments as logged:
// anyone can send a long one, and every byte logged is billed.
const maxPathValueBytes = 64

// MaxLogLineBytes is the budget of the one log line of an accepted
// single-event webhook with an event id of up to 64 bytes (CloudWatch Logs
// bills every byte ingested).
const MaxLogLineBytes = 340
