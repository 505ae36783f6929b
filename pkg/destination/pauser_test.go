package destination_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// fakeOutbound stands in for tenant.SSM.
type fakeOutbound map[string]tenant.Outbound

func (f fakeOutbound) Outbound(_ context.Context, id string) (tenant.Outbound, error) {
	out, ok := f[id]
	if !ok {
		return out, tenant.ErrNotFound
	}
	return out, nil
}

// TestPauser runs a pause, a second pause, a resume and a second resume as
// scripts/destination and the console make them, and every refusal: each
// with the sentence the operator reads, or the error.
func TestPauser(t *testing.T) {
	states := destination.NewMemory()
	clock := time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC)
	p := &destination.Pauser{Outbound: fakeOutbound{
		"relay": {Destinations: []tenant.Destination{{Name: "billing"}, {Name: "audit"}}},
		"demo":  {TargetURL: "http://127.0.0.1:3001/tenants/demo/events"},
	}, States: states, Now: func() time.Time { return clock }}
	ctx := context.Background()
	for _, tt := range []struct {
		name, op, tenant, dest, reason string
		after                          time.Duration
		want                           string
		err                            error
	}{
		{"pause", "pause", "relay", "billing", "their maintenance", 0,
			"paused relay/billing: paused since 2026-12-06T18:00:00Z (0s ago) by operator: their maintenance. Its events wait on the queue, no attempt counted and none dead-lettered, until it is resumed.", nil},
		{"pause again", "pause", "relay", "billing", "again", time.Minute,
			"relay/billing was already paused, left as it is: paused since 2026-12-06T18:00:00Z (1m0s ago) by operator: their maintenance", nil},
		{"resume", "resume", "relay", "billing", "", time.Hour,
			"resumed relay/billing, which was paused since 2026-12-06T18:00:00Z (1h1m0s ago) by operator: their maintenance. Its waiting events come back within 6m16s and are delivered in order, at its rate.", nil},
		{"resume again", "resume", "relay", "billing", "", 0, "relay/billing is not paused", nil},
		{"no reason", "pause", "relay", "audit", " ", 0, "", destination.ErrInvalid},
		{"an unknown destination", "pause", "relay", "ledger", "x", 0, "", destination.ErrUnknown},
		{"a targetUrl", "resume", "demo", "forward", "", 0, "", destination.ErrUnknown},
		{"an unknown tenant", "pause", "acme", "billing", "x", 0, "", destination.ErrUnknownTenant},
		{"an unknown tenant resumed", "resume", "acme", "billing", "", 0, "", destination.ErrUnknownTenant},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock = clock.Add(tt.after)
			var got string
			var err error
			if tt.op == "pause" {
				got, err = p.Pause(ctx, tt.tenant, tt.dest, tt.reason)
			} else {
				got, err = p.Resume(ctx, tt.tenant, tt.dest)
			}
			if !errors.Is(err, tt.err) || tt.err == nil && err != nil || got != tt.want {
				t.Errorf("%s(%s, %s) = %q, %v; want %q, %v", tt.op, tt.tenant, tt.dest, got, err, tt.want, tt.err)
			}
		})
	}
	for _, tt := range []struct {
		tenant string
		want   []string
		err    error
	}{
		{"relay", []string{"audit", "billing"}, nil},
		{"demo", []string{}, nil},
		{"acme", nil, destination.ErrUnknownTenant},
	} {
		got, err := p.Names(ctx, tt.tenant)
		if !errors.Is(err, tt.err) || tt.err == nil && err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Names(%s) = %q, %v; want %q, %v", tt.tenant, got, err, tt.want, tt.err)
		}
	}
	// Nothing the refusals named was paused.
	all, err := states.States(ctx, "relay")
	if err != nil || all["billing"].IsPaused() || all["audit"].IsPaused() || all["ledger"].IsPaused() {
		t.Errorf("States(relay) = %+v, %v; want nothing paused", all, err)
	}
}
