package watch

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/destination"
)

func TestBreaches(t *testing.T) {
	const expiry = DefaultDeadLetterExpiry
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	auto := destination.Pause{Since: now.Add(-time.Hour), Reason: "no success for 6h0m0s: target unavailable: answered 503", By: destination.Auto}
	manual := destination.Pause{Since: now.Add(-time.Minute), Reason: "maintenance", By: destination.Operator}
	tests := []struct {
		name string
		o    Observation
		want []Breach
	}{
		{"idle", Observation{Tenant: "a", OldestMessageThreshold: 900 * time.Second}, nil},
		{"backlog under its threshold", Observation{Tenant: "a", Messages: 3, OldestAge: 900 * time.Second, KnownOldestAge: true, OldestMessageThreshold: 900 * time.Second}, nil},
		{"backlog over its threshold", Observation{Tenant: "a", Messages: 3, OldestAge: 901 * time.Second, KnownOldestAge: true, OldestMessageThreshold: 900 * time.Second},
			[]Breach{{Tenant: "a", Rule: OldestMessage, Value: 901, Threshold: 900}}},
		{"a tenant's own threshold", Observation{Tenant: "a", Messages: 1, OldestAge: 61 * time.Second, KnownOldestAge: true, OldestMessageThreshold: time.Minute},
			[]Breach{{Tenant: "a", Rule: OldestMessage, Value: 61, Threshold: 60}}},
		{"backlog without an age datapoint is not judged", Observation{Tenant: "a", Messages: 3, OldestMessageThreshold: time.Second}, nil},
		{"one dead letter", Observation{Tenant: "a", DeadLetters: 1, OldestDeadLetterAge: time.Hour, KnownOldestDeadLetterAge: true},
			[]Breach{{Tenant: "a", Rule: DeadLetters, Value: 1, Threshold: 0}}},
		{"dead letter 10 days old exactly", Observation{Tenant: "a", DeadLetters: 2, OldestDeadLetterAge: expiry, KnownOldestDeadLetterAge: true},
			[]Breach{{Tenant: "a", Rule: DeadLetters, Value: 2, Threshold: 0}}},
		{"dead letter past 10 days", Observation{Tenant: "a", DeadLetters: 2, OldestDeadLetterAge: expiry + time.Second, KnownOldestDeadLetterAge: true},
			[]Breach{{Tenant: "a", Rule: DeadLetters, Value: 2, Threshold: 0}, {Tenant: "a", Rule: DeadLettersExpiring, Value: 864001, Threshold: 864000}}},
		{"all three", Observation{Tenant: "b", Messages: 1, OldestAge: time.Hour, KnownOldestAge: true, OldestMessageThreshold: 900 * time.Second,
			DeadLetters: 4, OldestDeadLetterAge: 11 * 24 * time.Hour, KnownOldestDeadLetterAge: true},
			[]Breach{{Tenant: "b", Rule: OldestMessage, Value: 3600, Threshold: 900}, {Tenant: "b", Rule: DeadLetters, Value: 4, Threshold: 0}, {Tenant: "b", Rule: DeadLettersExpiring, Value: 950400, Threshold: 864000}}},
		{"paused destinations, by name", Observation{Tenant: "a", Messages: 2, Paused: map[string]destination.Pause{"crm": manual, "billing": auto}},
			[]Breach{{Tenant: "a", Rule: DestinationPaused, Value: 3600, Destination: "billing", Pause: auto}, {Tenant: "a", Rule: DestinationPaused, Value: 60, Destination: "crm", Pause: manual}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Breaches(tt.o, expiry, now); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Breaches(%+v) = %v, want %v", tt.o, got, tt.want)
			}
		})
	}
}

func TestNext(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	const gap, repeat = 15 * time.Minute, time.Hour
	tests := []struct {
		name       string
		st         State
		now        time.Time
		want       State
		wantNotify bool
	}{
		{"a new breach is notified", State{}, at(0), State{at(0), at(0), at(0)}, true},
		{"five minutes on, not again", State{at(0), at(0), at(0)}, at(5), State{at(0), at(5), at(0)}, false},
		{"one run missed is the same breach", State{at(0), at(5), at(0)}, at(20), State{at(0), at(20), at(0)}, false},
		{"after the repeat interval, again", State{at(0), at(55), at(0)}, at(60), State{at(0), at(60), at(60)}, true},
		{"just before the repeat interval, not", State{at(0), at(55), at(0)}, at(59), State{at(0), at(59), at(0)}, false},
		{"seen again after a gap: a new breach", State{at(0), at(10), at(0)}, at(26), State{at(26), at(26), at(26)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notify := Next(tt.st, tt.now, gap, repeat)
			if got != tt.want || notify != tt.wantNotify {
				t.Errorf("Next(%+v, %s) = %+v, %v, want %+v, %v", tt.st, tt.now.Format("15:04"), got, notify, tt.want, tt.wantNotify)
			}
		})
	}
}

// The notification names the tenant and the commands to run for it.
func TestMessage(t *testing.T) {
	since := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		b    Breach
		want []string
	}{
		{Breach{Tenant: "acme", Rule: OldestMessage, Value: 1200, Threshold: 900}, []string{"Tenant acme of hookpack stack prod", "20m0s (threshold 15m0s)", "scripts/inspect -stack prod -tenant acme -summary", "2026-11-28T09:00:00Z"}},
		{Breach{Tenant: "acme", Rule: DeadLetters, Value: 3, Threshold: 0}, []string{"3 dead-lettered event(s)", "scripts/replay -stack prod -tenant acme list", "redrive"}},
		{Breach{Tenant: "acme", Rule: DeadLettersExpiring, Value: 864001, Threshold: 864000}, []string{"240h0m1s old", "in about 96h0m0s", "scripts/replay -stack prod -tenant acme list"}},
		{Breach{Tenant: "acme", Rule: DestinationPaused, Value: 3600, Destination: "billing",
			Pause: destination.Pause{Since: since, Reason: "no success for 6h0m0s (failing since 2026-11-28T03:00:00Z); last failure: target unavailable: answered 503", By: destination.Auto}},
			[]string{"Tenant acme of hookpack stack prod: its destination billing is paused since 2026-11-28T09:00:00Z (1h0m0s ago) by auto: no success for 6h0m0s",
				"answered 503", "its events wait", "STACK_NAME=prod scripts/tenant/tenant.sh resume acme billing", "scripts/inspect -stack prod -tenant acme -summary"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.b.Rule), func(t *testing.T) {
			got := Message("prod", tt.b, since, time.Hour)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("Message(%v) = %q, want it to contain %q", tt.b, got, w)
				}
			}
		})
	}
}
