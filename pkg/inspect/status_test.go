package inspect

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/replay"
)

// One situation, one status, whichever tool meets it.
func TestExitStatus(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"done", nil, 0},
		{"malformed", fmt.Errorf("%w event key %q", ErrMalformed, "x#y#"), 2},
		{"unknown tenant", fmt.Errorf("%w nobody", ErrUnknownTenant), 2},
		{"not a core stack", fmt.Errorf("%w: stack t", ErrNotCoreStack), 2},
		{"no such event", fmt.Errorf("%w %q", ErrUnknownEvent, "evt_1"), 3},
		{"no dead letter selected", NotDeadLettered("evt_1", []Journey{{Key: "acme#stripe#evt_1", State: StateDone}}, nil), 3},
		{"a failed call", errors.New("connection refused"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitStatus(tt.err); got != tt.want {
				t.Errorf("ExitStatus(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// A replay that selects no dead letter of an event says why, per event the
// id names, from inspect's answer.
func TestNotDeadLettered(t *testing.T) {
	unknown := fmt.Errorf("%w %q of tenant acme: no idempotency claim", ErrUnknownEvent, "evt_9")
	failed := errors.New("connection refused")
	tests := []struct {
		name       string
		js         []Journey
		err        error
		want       []string
		unknown    bool // wraps ErrUnknownEvent too
		selectable bool // the error is not ErrNoDeadLetter
	}{
		{"done", []Journey{{Key: "acme#stripe#evt_1", State: StateDone, Why: "every effect recorded is done"}}, nil,
			[]string{"event acme#stripe#evt_1: not dead-lettered: DONE (every effect recorded is done)"}, false, false},
		{"retrying", []Journey{{Key: "acme#stripe#evt_1", State: StateRetrying, Why: "an effect failed"}}, nil,
			[]string{"not dead-lettered: RETRYING (an effect failed)"}, false, false},
		{"dead-lettered, its dead letter gone", []Journey{{Key: "acme#stripe#evt_1", State: StateDeadLettered, Why: "no longer in the DLQ"}}, nil,
			[]string{"event acme#stripe#evt_1: not in the DLQ (DEAD_LETTERED: no longer in the DLQ)"}, false, false},
		{"replaying", []Journey{{Key: "acme#stripe#evt_1", State: StateReplaying, Why: "a replay moved it"}}, nil,
			[]string{"not in the DLQ (REPLAYING: a replay moved it)"}, false, false},
		{"listed, yet not selected", []Journey{{Key: "acme#stripe#evt_1", State: StateDeadLettered, DeadLetter: &replay.Item{MessageID: "d1"}}}, nil,
			[]string{"in the DLQ when it was looked up, but not selected", "(d1)"}, false, false},
		{"two events of one id: each", []Journey{{Key: "acme#stripe#x", State: StateDone, Why: "done"}, {Key: "acme#twilio#x", State: StateQueued, Why: "waits"}}, nil,
			[]string{"acme#stripe#x: not dead-lettered: DONE (done); event acme#twilio#x: not dead-lettered: QUEUED (waits)"}, false, false},
		{"no such event", nil, unknown, []string{"event evt_9: no such event (no trace of the event"}, true, false},
		{"a failed lookup: its own error", nil, failed, []string{"connection refused"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NotDeadLettered("evt_9", tt.js, tt.err)
			if err == nil || errors.Is(err, ErrNoDeadLetter) == tt.selectable || errors.Is(err, ErrUnknownEvent) != tt.unknown {
				t.Fatalf("NotDeadLettered() = %v; want ErrNoDeadLetter %v, ErrUnknownEvent %v", err, !tt.selectable, tt.unknown)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("NotDeadLettered() = %q, want %q in it", err, w)
				}
			}
		})
	}
}
