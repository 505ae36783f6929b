package inspect

import (
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/replay"
)

var t0 = time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)

// Every effect record reads as done, dead, in progress or failed, retrying,
// whatever the ledger's status word.
func TestReadEffect(t *testing.T) {
	later, earlier := t0.Add(time.Minute), t0.Add(-time.Minute)
	busy, idle := Depth{InFlight: 1}, Depth{}
	tests := []struct {
		name       string
		e          Effect
		q          Depth
		deadLetter bool
		want       EffectState
		meaning    string
	}{
		{"completed", Effect{Name: "mark-paid", Status: ledger.StatusCompleted}, idle, false, EffectDone, "completed"},
		{"completed before its event was dead-lettered", Effect{Name: "mark-paid", Status: ledger.StatusCompleted, DeadMessage: "m1", Reason: "400"}, idle, true,
			EffectDone, "done before its event was dead-lettered from message m1 (400)"},
		{"dead", Effect{Name: "forward", Status: ledger.StatusDead, DeadMessage: "m1", Reason: "answered 400"}, idle, true,
			EffectDead, "dead-lettered from message m1 (answered 400); runs again only through a replay"},
		{"failed", Effect{Name: "forward", Status: ledger.StatusFailed, Reason: "503"}, busy, false, EffectRetrying, "when its message is received again"},
		{"failed, its dead letter listed", Effect{Name: "forward", Status: ledger.StatusFailed}, idle, true, EffectRetrying, "when its dead letter is replayed"},
		{"forward INPROGRESS, its lease over: done by its message's deletion", Effect{Name: "forward", Status: ledger.StatusInProgress, LeaseExpires: earlier}, busy, false,
			EffectDone, "completion is its message's deletion"},
		{"forward INPROGRESS, nothing in flight: done", Effect{Name: "forward", Status: ledger.StatusInProgress, LeaseExpires: later}, idle, false, EffectDone, "forwarded"},
		{"forward INPROGRESS, leased while a message is in flight", Effect{Name: "forward", Status: ledger.StatusInProgress, LeaseExpires: later}, busy, false,
			EffectInProgress, "lease until 2026-11-28T08:01:00Z"},
		{"custom INPROGRESS, leased", Effect{Name: "mark-paid", Status: ledger.StatusInProgress, LeaseExpires: later}, idle, false, EffectInProgress, "lease until"},
		{"custom INPROGRESS, its lease over: interrupted", Effect{Name: "mark-paid", Status: ledger.StatusInProgress, LeaseExpires: earlier}, idle, false, EffectRetrying, "interrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, meaning := readEffect(tt.e, tt.q, tt.deadLetter, t0)
			if got != tt.want || !strings.Contains(meaning, tt.meaning) {
				t.Errorf("readEffect(%+v) = %q, %q; want %q, with %q", tt.e, got, meaning, tt.want, tt.meaning)
			}
		})
	}
}

// The state line never contradicts the queue line: a dead letter not in
// the listing is hidden by a replay, moved to the queue, not listed, or
// gone, as the counts say.
func TestDecide(t *testing.T) {
	claim := &Claim{Status: idempotency.StatusCompleted, Expires: t0.Add(time.Hour)}
	dead := Effect{Name: "forward", State: EffectDead, Status: ledger.StatusDead, DeadMessage: "m1", Reason: "answered 400"}
	doneBeforeDead := Effect{Name: "mark-paid", State: EffectDone, Status: ledger.StatusCompleted, DeadMessage: "m1", Reason: "answered 400"}
	done := Effect{Name: "forward", State: EffectDone, Status: ledger.StatusInProgress}
	letter := &replay.Item{MessageID: "d2", OriginalMessageID: "m2", Reason: "answered 400 again"}
	tests := []struct {
		name      string
		j         Journey
		want      State
		why, nowy string // in the why, and never in it
	}{
		{"dead letter listed", Journey{Claim: claim, DeadLetter: letter, Effects: []Effect{dead}}, StateDeadLettered, "in the tenant's DLQ: answered 400 again", ""},
		{"dead, the DLQ hides one: a redrive runs", Journey{Claim: claim, Effects: []Effect{dead}, Queue: Depth{DeadLetters: 1, DeadLettersInFlight: 1}},
			StateReplaying, "hides 1", "no longer in the DLQ"},
		{"dead, moved to the queue by a replay", Journey{Claim: claim, Effects: []Effect{dead}, Queue: Depth{Visible: 1}}, StateReplaying, "a replay moved it", "no longer in the DLQ"},
		{"dead, the DLQ holds others", Journey{Claim: claim, Effects: []Effect{dead}, Queue: Depth{DeadLetters: 12}}, StateDeadLettered, "not among those listed of the DLQ's 12", "no longer"},
		{"dead, nothing anywhere", Journey{Claim: claim, Effects: []Effect{dead}}, StateDeadLettered, "no longer in the DLQ, which is empty", ""},
		{"completed before it was dead-lettered", Journey{Claim: claim, Effects: []Effect{done, doneBeforeDead}}, StateDeadLettered, "from message m1", ""},
		{"done", Journey{Claim: claim, Effects: []Effect{done}}, StateDone, "every effect", ""},
		{"retrying", Journey{Claim: claim, Effects: []Effect{done, {Name: "mark-paid", State: EffectRetrying}}, Queue: Depth{Delayed: 1}}, StateRetrying, "failed", ""},
		{"in flight", Journey{Claim: claim, Effects: []Effect{{Name: "forward", State: EffectInProgress}}, Queue: Depth{InFlight: 1}}, StateInFlight, "lease", ""},
		{"queued", Journey{Claim: claim, Queue: Depth{Visible: 2}}, StateQueued, "2 visible", ""},
		{"receiving", Journey{Claim: &Claim{Status: idempotency.StatusInProgress, LeaseExpires: t0.Add(time.Second)}}, StateReceiving, "not queued", ""},
		{"unknown", Journey{}, StateUnknown, "no claim", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := decide(tt.j, t0)
			if got != tt.want || !strings.Contains(why, tt.why) || tt.nowy != "" && strings.Contains(why, tt.nowy) {
				t.Errorf("decide() = %s, %q; want %s, with %q", got, why, tt.want, tt.why)
			}
		})
	}
}

// A dead letter replayed and dead-lettered again while the redrive held the
// older one: the event shows its newest.
func TestNewestDeadLetter(t *testing.T) {
	dead := []replay.Item{
		{MessageID: "d1", EventKey: "acme#stripe#evt_1", SentAt: t0},
		{MessageID: "x", EventKey: "acme#stripe#evt_2", SentAt: t0.Add(2 * time.Minute)},
		{MessageID: "d2", EventKey: "acme#stripe#evt_1", SentAt: t0.Add(time.Minute)},
	}
	if got := newestDeadLetter(dead, "acme#stripe#evt_1"); got == nil || got.MessageID != "d2" {
		t.Errorf("newestDeadLetter() = %+v, want d2", got)
	}
	if got := newestDeadLetter(dead, "acme#stripe#evt_3"); got != nil {
		t.Errorf("newestDeadLetter(another event) = %+v, want nil", got)
	}
}
