package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/internal/metrics"
)

// log writes the message's one line: fixed keys, no body, secret or
// signature. A message done (processed or skipped) is logged at DEBUG, which
// Lambda's ApplicationLogLevel INFO drops before CloudWatch bills it: the
// webhook's one INFO line is ingest's, and the batch line counts it. Every
// failure is logged at WARN or ERROR with its reason.
func (h *Handler) log(ctx context.Context, rec *events.SQSMessage, r *result) {
	level := slog.LevelDebug
	switch r.outcome {
	case outDeadLettered:
		level = slog.LevelError
	case outRetried, outBlocked, outDeadline, outFenced:
		level = slog.LevelWarn
	}
	replayAttrs := replayedBy(rec)
	if replayAttrs != nil && level < slog.LevelInfo {
		level = slog.LevelInfo // a replay's run is kept, done or not: it is rare
	}
	if !h.cfg.Logger.Enabled(ctx, level) {
		return
	}
	attrs := []any{
		slog.String("messageId", rec.MessageId),
		slog.String("outcome", string(r.outcome)),
		slog.Int("receiveCount", r.receives),
		slog.Float64("durationMs", ms(r.dur)),
		slog.String("groupId", r.groupID),
	}
	if r.env != nil {
		attrs = append(attrs,
			slog.String("tenantId", r.env.Tenant),
			slog.String("provider", r.env.Provider),
			slog.String("eventId", r.env.EventID),
			slog.String("eventType", r.env.Type),
			slog.String("idempotencyKey", r.env.Key),
		)
		if !r.env.ReceivedAt.IsZero() {
			attrs = append(attrs, slog.Float64("ageMs", ms(h.cfg.Now().Sub(r.env.ReceivedAt))))
		}
	}
	if s := r.id.Stream.String(); s != "" {
		attrs = append(attrs, slog.String("stream", s)) // queue.AttrStream: which destination
	}
	attrs = append(attrs, replayAttrs...)
	if r.attempt > 0 {
		attrs = append(attrs, slog.Int("attempt", r.attempt))
	}
	if r.effects+r.skips > 0 {
		attrs = append(attrs, slog.Int("effects", r.effects), slog.Int("effectsSkipped", r.skips), slog.Float64("effectMs", ms(r.effectDur)))
	}
	if r.setVisibility {
		attrs = append(attrs, slog.Int64("visibilitySec", int64(r.visibility/time.Second)))
	}
	if r.err != nil {
		attrs = append(attrs, slog.String("error", r.err.Error()))
	}
	if r.visibilityErr != nil {
		attrs = append(attrs, slog.String("visibilityError", r.visibilityErr.Error()))
	}
	h.cfg.Logger.Log(ctx, level, "message", attrs...)
}

// logBatch writes one INFO line per outcome present in the batch, each an
// EMF record: Messages (the count) by outcome, MessageDuration and
// EffectLatency with one value per message. Aggregating per batch keeps the
// metrics of every message at a tenth of the bytes of one line each.
func (h *Handler) logBatch(ctx context.Context, results []result) {
	type agg struct {
		durations, effects []float64
	}
	byOutcome := map[outcome]*agg{}
	var order []outcome
	for i := range results {
		r := &results[i]
		a := byOutcome[r.outcome]
		if a == nil {
			a = &agg{}
			byOutcome[r.outcome] = a
			order = append(order, r.outcome)
		}
		a.durations = append(a.durations, ms(r.dur))
		if r.effects > 0 {
			a.effects = append(a.effects, ms(r.effectDur))
		}
	}
	for _, o := range order {
		a := byOutcome[o]
		mets := []metrics.Metric{
			{Name: "Messages", Unit: metrics.Count, Value: float64(len(a.durations))},
			{Name: "MessageDuration", Unit: metrics.Milliseconds, Values: a.durations},
		}
		if len(a.effects) > 0 {
			mets = append(mets, metrics.Metric{Name: "EffectLatency", Unit: metrics.Milliseconds, Values: a.effects})
		}
		attrs := append([]any{slog.String("outcome", string(o))}, metrics.Attrs(h.cfg.Now(), []string{"outcome"}, mets...)...)
		h.cfg.Logger.Log(ctx, slog.LevelInfo, "batch", attrs...)
	}
}

// replayedBy returns the log attributes naming how rec came back from the
// DLQ, or nil for a message the ingest sent: scripts/replay marks its moves
// with the dead letter's message id (AttrReplayOf); a move task (the
// console's "Start DLQ redrive") or a re-send that kept the dead letter's
// attributes carries AttrReason.
func replayedBy(rec *events.SQSMessage) []any {
	if a, ok := rec.MessageAttributes[AttrReplayOf]; ok {
		of := ""
		if a.StringValue != nil {
			of = *a.StringValue
		}
		return []any{slog.String("replayedBy", "scripts/replay"), slog.String("replayOf", of)}
	}
	if _, ok := rec.MessageAttributes[AttrReason]; ok {
		return []any{slog.String("replayedBy", "dlq-redrive")}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
