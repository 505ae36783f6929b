// Package destinationtest is the contract suite every destination store
// must pass: the in-memory twin, and the DynamoDB store against DynamoDB
// Local and moto.
package destinationtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/destination"
)

// Store is the behaviour under test.
type Store interface {
	States(ctx context.Context, tenantID string) (destination.States, error)
	Pause(ctx context.Context, tenantID, name, reason string, now time.Time) (destination.State, error)
	Resume(ctx context.Context, tenantID, name string) (destination.Pause, error)
	Failed(ctx context.Context, tenantID, name, reason string, now time.Time, after time.Duration, seen destination.State) (destination.State, error)
	Recovered(ctx context.Context, tenantID, name string, now time.Time, seen destination.State) (destination.State, error)
	Forget(ctx context.Context, tenantID string) error
}

// AutoPause is the auto-pause time the suite fails destinations for.
const AutoPause = 6 * time.Hour

var seq atomic.Int64

// Run runs the contract. newStore returns handles on one fresh storage:
// each handle stands for another process (a worker container, an
// operator's command), all sharing the states.
func Run(t *testing.T, newStore func(t *testing.T) func() Store) {
	ctx := context.Background()
	// Stored times are whole milliseconds.
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	tenant := func() string { return fmt.Sprintf("acme-%d-%d", time.Now().UnixNano()%1e9, seq.Add(1)) }
	states := func(t *testing.T, s Store, id string) destination.States {
		t.Helper()
		got, err := s.States(ctx, id)
		if err != nil {
			t.Fatalf("States(%s) = %v", id, err)
		}
		return got
	}
	failed := func(t *testing.T, s Store, id, name, reason string, now time.Time, seen destination.State) destination.State {
		t.Helper()
		got, err := s.Failed(ctx, id, name, reason, now, AutoPause, seen)
		if err != nil {
			t.Fatalf("Failed(%s/%s, %s) = %v", id, name, now, err)
		}
		return got
	}

	t.Run("UnknownIsHealthyAndNotPaused", func(t *testing.T) {
		s := newStore(t)()
		got := states(t, s, tenant())
		if len(got) != 0 || got["billing"].IsPaused() || got["billing"].IsFailing() {
			t.Errorf("States(new tenant) = %+v, want none", got)
		}
	})

	t.Run("PauseThenResume", func(t *testing.T) {
		stores := newStore(t)
		s, other, id := stores(), stores(), tenant()
		st, err := s.Pause(ctx, id, "billing", "maintenance until 14:00", t0)
		want := destination.Pause{Since: t0, Reason: "maintenance until 14:00", By: destination.Operator}
		if err != nil || st.Paused != want {
			t.Fatalf("Pause() = %+v, %v; want %+v", st, err, want)
		}
		got := states(t, other, id)
		if got["billing"].Paused != want || got["crm"].IsPaused() {
			t.Errorf("States() after Pause = %+v; want billing paused as %+v, crm not", got, want)
		}
		if got := states(t, other, tenant()); len(got) != 0 {
			t.Errorf("another tenant's States() = %+v, want none", got)
		}
		st, err = other.Pause(ctx, id, "billing", "again", t0.Add(time.Hour))
		if !errors.Is(err, destination.ErrAlreadyPaused) || st.Paused != want {
			t.Errorf("second Pause() = %+v, %v; want ErrAlreadyPaused and the first pause kept", st, err)
		}
		ended, err := other.Resume(ctx, id, "billing")
		if err != nil || ended != want {
			t.Errorf("Resume() = %+v, %v; want the pause it ended, %+v", ended, err, want)
		}
		if got := states(t, s, id); got["billing"].IsPaused() {
			t.Errorf("States() after Resume = %+v, want billing not paused", got)
		}
		if _, err := s.Resume(ctx, id, "billing"); !errors.Is(err, destination.ErrNotPaused) {
			t.Errorf("second Resume() = %v, want ErrNotPaused", err)
		}
		if _, err := s.Resume(ctx, tenant(), "billing"); !errors.Is(err, destination.ErrNotPaused) {
			t.Errorf("Resume(unknown tenant) = %v, want ErrNotPaused", err)
		}
	})

	t.Run("InvalidInput", func(t *testing.T) {
		s, id := newStore(t)(), tenant()
		for _, tt := range []struct{ tenant, name, reason string }{
			{"Acme", "billing", "why"},
			{id, "Billing", "why"},
			{id, "", "why"},
			{id, "billing", ""},
			{id, "billing", "  "},
			{id, "billing", "line\nbreak"},
			{id, "billing", strings.Repeat("x", destination.MaxReason+1)},
		} {
			if _, err := s.Pause(ctx, tt.tenant, tt.name, tt.reason, t0); !errors.Is(err, destination.ErrInvalid) {
				t.Errorf("Pause(%q, %q, %q) = %v, want ErrInvalid", tt.tenant, tt.name, tt.reason, err)
			}
		}
		if _, err := s.States(ctx, "no#tenant"); !errors.Is(err, destination.ErrInvalid) {
			t.Errorf("States(no#tenant) = %v, want ErrInvalid", err)
		}
		if _, err := s.Resume(ctx, id, "no#name"); !errors.Is(err, destination.ErrInvalid) {
			t.Errorf("Resume(no#name) = %v, want ErrInvalid", err)
		}
		if len(states(t, s, id)) != 0 {
			t.Errorf("invalid calls stored something")
		}
	})

	t.Run("AutoPauseAfterFailingWithoutSuccess", func(t *testing.T) {
		stores := newStore(t)
		s, id := stores(), tenant()
		st := failed(t, s, id, "billing", "target unavailable: answered 503", t0, destination.State{})
		want := destination.Failing{Since: t0, Reason: "target unavailable: answered 503"}
		if st.Failing != want || st.IsPaused() {
			t.Fatalf("first Failed() = %+v, want a streak %+v, not paused", st, want)
		}
		// Failures within the auto-pause time change nothing.
		for _, d := range []time.Duration{time.Minute, time.Hour, AutoPause - time.Millisecond} {
			if st = failed(t, s, id, "billing", "target unavailable: timed out", t0.Add(d), st); st.Failing != want || st.IsPaused() {
				t.Fatalf("Failed() %s into the streak = %+v, want the streak unchanged, not paused", d, st)
			}
		}
		if got := states(t, stores(), id)["billing"]; got.Failing != want || got.IsPaused() {
			t.Fatalf("States() before the auto-pause time = %+v, want the streak, not paused", got)
		}
		at := t0.Add(AutoPause)
		st = failed(t, s, id, "billing", "target unavailable: answered 502", at, st)
		if st.Paused.By != destination.Auto || !st.Paused.Since.Equal(at) ||
			!strings.Contains(st.Paused.Reason, "answered 502") || !strings.Contains(st.Paused.Reason, t0.Format(time.RFC3339)) {
			t.Fatalf("Failed() at the auto-pause time = %+v; want paused by auto at %s, naming the failure and the streak's start", st, at)
		}
		if got := states(t, stores(), id)["billing"]; got.Paused != st.Paused {
			t.Errorf("States() after the auto-pause = %+v, want %+v", got, st.Paused)
		}
		// A failure of a paused destination (a delivery under way when it
		// was paused) writes nothing.
		if again := failed(t, s, id, "billing", "other", at.Add(time.Hour), st); again.Paused != st.Paused {
			t.Errorf("Failed() while paused = %+v, want the pause kept", again)
		}
		// Resume ends the streak too: the next failure starts a new one.
		if _, err := s.Resume(ctx, id, "billing"); err != nil {
			t.Fatalf("Resume() = %v", err)
		}
		st = failed(t, s, id, "billing", "answered 500", at.Add(2*time.Hour), states(t, s, id)["billing"])
		if st.IsPaused() || !st.Failing.Since.Equal(at.Add(2*time.Hour)) {
			t.Errorf("Failed() after Resume = %+v, want a new streak, not paused", st)
		}
	})

	t.Run("SuccessEndsTheStreak", func(t *testing.T) {
		stores := newStore(t)
		s, id := stores(), tenant()
		st := failed(t, s, id, "billing", "answered 503", t0, destination.State{})
		st, err := s.Recovered(ctx, id, "billing", t0.Add(time.Hour), st)
		if err != nil || st.IsFailing() {
			t.Fatalf("Recovered() = %+v, %v; want the streak ended", st, err)
		}
		if got := states(t, stores(), id)["billing"]; got.IsFailing() {
			t.Errorf("States() after Recovered = %+v, want not failing", got)
		}
		// Failing again after the success: the time counts from the new
		// streak's start, not from the first failure.
		st = failed(t, s, id, "billing", "answered 503", t0.Add(2*time.Hour), st)
		st = failed(t, s, id, "billing", "answered 503", t0.Add(AutoPause+time.Hour), st)
		if st.IsPaused() || !st.Failing.Since.Equal(t0.Add(2*time.Hour)) {
			t.Errorf("Failed() %s after the first failure but less after the success = %+v, want failing since the new streak, not paused", AutoPause+time.Hour, st)
		}
	})

	t.Run("DecidedOnStaleStates", func(t *testing.T) {
		stores := newStore(t)
		a, b, id := stores(), stores(), tenant()
		// Both see no streak; a starts one, b's failure keeps it.
		sa := failed(t, a, id, "billing", "first", t0, destination.State{})
		sb := failed(t, b, id, "billing", "second", t0.Add(time.Second), destination.State{})
		if sb.Failing != sa.Failing {
			t.Errorf("concurrent Failed() = %+v, want the streak already started, %+v", sb, sa.Failing)
		}
		// b's success ends the streak; a, still seeing it, pauses nothing.
		if _, err := b.Recovered(ctx, id, "billing", t0.Add(time.Hour), sb); err != nil {
			t.Fatalf("Recovered() = %v", err)
		}
		st := failed(t, a, id, "billing", "late", t0.Add(AutoPause), sa)
		if st.IsPaused() {
			t.Errorf("Failed() on a streak a success ended = %+v, want not paused", st)
		}
		// A success seen late spares a streak started after it.
		st = failed(t, a, id, "billing", "new", t0.Add(AutoPause+time.Minute), destination.State{})
		if st, _ = b.Recovered(ctx, id, "billing", t0.Add(AutoPause), st); !st.IsFailing() {
			t.Errorf("Recovered() before the streak's start = %+v, want the streak kept", st)
		}
		// An operator's pause stands over an auto-pause decided meanwhile.
		if _, err := b.Pause(ctx, id, "billing", "by hand", t0.Add(AutoPause+2*time.Minute)); err != nil {
			t.Fatalf("Pause() = %v", err)
		}
		st = failed(t, a, id, "billing", "x", t0.Add(3*AutoPause), st)
		if st.Paused.By != destination.Operator || st.Paused.Reason != "by hand" {
			t.Errorf("auto-pause over an operator's = %+v, want the operator's kept", st.Paused)
		}
	})

	t.Run("NoAutoPauseWhenDisabled", func(t *testing.T) {
		s, id := newStore(t)(), tenant()
		st, err := s.Failed(ctx, id, "billing", "x", t0, 0, destination.State{})
		if err == nil {
			st, err = s.Failed(ctx, id, "billing", "x", t0.Add(30*24*time.Hour), 0, st)
		}
		if err != nil || st.IsPaused() {
			t.Errorf("Failed(after 0) a month on = %+v, %v; want never paused", st, err)
		}
	})

	t.Run("LongFailureReasonIsCut", func(t *testing.T) {
		s, id := newStore(t)(), tenant()
		st := failed(t, s, id, "billing", strings.Repeat("é", destination.MaxReason), t0, destination.State{})
		if len(st.Failing.Reason) > destination.MaxReason || !strings.HasPrefix(st.Failing.Reason, "éé") || strings.ContainsRune(st.Failing.Reason, '\uFFFD') {
			t.Errorf("Failed(long reason) kept %d bytes %q…, want at most %d, whole runes", len(st.Failing.Reason), st.Failing.Reason[:10], destination.MaxReason)
		}
		st = failed(t, s, id, "billing", strings.Repeat("x", 2*destination.MaxReason), t0.Add(AutoPause), st)
		if len(st.Paused.Reason) > destination.MaxReason || !st.IsPaused() {
			t.Errorf("auto-pause reason of %d bytes, paused %v; want at most %d, paused", len(st.Paused.Reason), st.IsPaused(), destination.MaxReason)
		}
	})

	t.Run("ForgetRemovesTheTenant", func(t *testing.T) {
		s, id := newStore(t)(), tenant()
		if _, err := s.Pause(ctx, id, "billing", "x", t0); err != nil {
			t.Fatalf("Pause() = %v", err)
		}
		failed(t, s, id, "crm", "y", t0, destination.State{})
		if err := s.Forget(ctx, id); err != nil {
			t.Fatalf("Forget() = %v", err)
		}
		if got := states(t, s, id); len(got) != 0 {
			t.Errorf("States() after Forget = %+v, want none", got)
		}
	})
}
