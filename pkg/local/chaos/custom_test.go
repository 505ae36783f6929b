package chaos

import (
	"context"
	"errors"
	"testing"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/worker"
)

// TestCustomEffectsDoubled pins what counts as a doubled custom effect: a
// run after a run that returned nil, never a run after a crash.
func TestCustomEffectsDoubled(t *testing.T) {
	tests := []struct {
		name        string
		runs        []bool // per run: the event's first message (its effect crashes when chained)
		chained     bool
		wantErrs    int
		wantDoubled int
	}{
		{"one run", []bool{true}, false, 0, 0},
		{"a second run after success", []bool{true, true}, false, 0, 1},
		{"crashes, then the redriven copy succeeds", []bool{true, true, false}, true, 2, 0},
		{"a run after the redriven copy succeeded", []bool{true, false, false}, true, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFaults(1, Rates{}, 0)
			c := newCustomEffects(f, func(string, string) bool { return false }, func(string, string) bool { return tt.chained }, 0)
			ev := &worker.Event{Envelope: &envelope.Envelope{Tenant: redriveTenant, EventID: "e0"}}
			var b body
			b.EventID, b.Data.Conversation = "e0", "c"
			errs := 0
			for _, original := range tt.runs {
				ctx, _ := newInvocation(context.Background())
				if err := c.run(ctx, ev, b, "record", "k0", original); err != nil {
					if !errors.Is(err, errDied) {
						t.Fatalf("run = %v, want nil or errDied", err)
					}
					errs++
				}
			}
			applied, doubled, _, order, n := c.outcomes()
			if errs != tt.wantErrs || len(doubled) != tt.wantDoubled {
				t.Errorf("crashes %d, doubled %v; want %d crashes, %d doubled", errs, doubled, tt.wantErrs, tt.wantDoubled)
			}
			if n != 1 || len(order[redriveTenant+"/c"]) != 1 || !applied[redriveTenant+"/e0"] {
				t.Errorf("applied %d effects (order %v, events %v), want the effect applied once", n, order, applied)
			}
		})
	}
}
