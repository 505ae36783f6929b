package inspect

import (
	"context"
	"time"

	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/replay"
)

// EffectRun is one effect of a tenant's event that ran and did not fail:
// its ledger effect (worker.ForwardEffect, a destination's
// worker.DestinationEffect, or a custom one), its event key, and when.
type EffectRun struct {
	Effect string    `json:"effect"`
	Event  string    `json:"event"`
	At     time.Time `json:"at"`
}

// EffectRuns returns the tenant's effects that ran at since or later and
// did not fail, from its ledger records: a Scan of the whole ledger table,
// so a caller asks for it when an operator does. A record counts when it
// is COMPLETED, or INPROGRESS: a forward's stays INPROGRESS once delivered
// (its completion is its message's deletion, docs/ledger.md), so an
// attempt still under way counts too. Its time is its last claim's or
// completion's, which both restart the record's retention
// (ledger.DefaultRetention): its expiration less the retention, to the
// second. It returns an error wrapping ErrMalformed (CheckTenant) or a
// wrapped AWS error.
func (in *Inspector) EffectRuns(ctx context.Context, tenantID string, since time.Time) ([]EffectRun, error) {
	if err := CheckTenant(tenantID); err != nil {
		return nil, err
	}
	recs, err := in.cfg.Ledger.Effects(ctx, tenantID, "")
	if err != nil {
		return nil, err
	}
	var out []EffectRun
	for _, r := range recs {
		if r.Status != ledger.StatusCompleted && r.Status != ledger.StatusInProgress {
			continue
		}
		if at := r.Expires.Add(-ledger.DefaultRetention); !at.Before(since) {
			out = append(out, EffectRun{Effect: r.Key.Effect, Event: r.Key.Event, At: at})
		}
	}
	return out, nil
}

// ReasonDestinations returns the destinations a worker's reason or error
// names ("destination billing: …"), in order.
func ReasonDestinations(reason string) []string { return pacedFor(reason) }

// DeadLetters returns the tenant's queue depth and the dead letters a
// listing of its DLQ sees (the head of each conversation: package replay),
// with a note when the listing saw fewer than the DLQ holds. It returns an
// error wrapping ErrMalformed (CheckTenant) or ErrUnknownTenant, or a
// wrapped AWS error.
func (in *Inspector) DeadLetters(ctx context.Context, tenantID string) (Depth, []replay.Item, []string, error) {
	if err := CheckTenant(tenantID); err != nil {
		return Depth{}, nil, nil, err
	}
	d, err := in.depth(ctx, tenantID)
	if err != nil {
		return d, nil, nil, err
	}
	items, notes, err := in.deadLetters(ctx, d)
	return d, items, notes, err
}
