package watch

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestBreaches(t *testing.T) {
	const expiry = DefaultDeadLetterExpiry
	tests := []struct {
		name string
		o    Observation
		want []Breach
	}{
		{"idle", Observation{Tenant: "a", OldestMessageThreshold: 900 * time.Second}, nil},
		{"backlog under its threshold", Observation{Tenant: "a", Messages: 3, OldestAge: 900 * time.Second, KnownOldestAge: true, OldestMessageThreshold: 900 * time.Second}, nil},
		{"backlog over its threshold", Observation{Tenant: "a", Messages: 3, OldestAge: 901 * time.Second, KnownOldestAge: true, OldestMessageThreshold: 900 * time.Second},
			[]Breach{{"a", OldestMessage, 901, 900}}},
		{"a tenant's own threshold", Observation{Tenant: "a", Messages: 1, OldestAge: 61 * time.Second, KnownOldestAge: true, OldestMessageThreshold: time.Minute},
			[]Breach{{"a", OldestMessage, 61, 60}}},
		{"backlog without an age datapoint is not judged", Observation{Tenant: "a", Messages: 3, OldestMessageThreshold: time.Second}, nil},
		{"one dead letter", Observation{Tenant: "a", DeadLetters: 1, OldestDeadLetterAge: time.Hour, KnownOldestDeadLetterAge: true},
			[]Breach{{"a", DeadLetters, 1, 0}}},
		{"dead letter 10 days old exactly", Observation{Tenant: "a", DeadLetters: 2, OldestDeadLetterAge: expiry, KnownOldestDeadLetterAge: true},
			[]Breach{{"a", DeadLetters, 2, 0}}},
		{"dead letter past 10 days", Observation{Tenant: "a", DeadLetters: 2, OldestDeadLetterAge: expiry + time.Second, KnownOldestDeadLetterAge: true},
			[]Breach{{"a", DeadLetters, 2, 0}, {"a", DeadLettersExpiring, 864001, 864000}}},
		{"all three", Observation{Tenant: "b", Messages: 1, OldestAge: time.Hour, KnownOldestAge: true, OldestMessageThreshold: 900 * time.Second,
			DeadLetters: 4, OldestDeadLetterAge: 11 * 24 * time.Hour, KnownOldestDeadLetterAge: true},
			[]Breach{{"b", OldestMessage, 3600, 900}, {"b", DeadLetters, 4, 0}, {"b", DeadLettersExpiring, 950400, 864000}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Breaches(tt.o, expiry); !reflect.DeepEqual(got, tt.want) {
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
		{Breach{"acme", OldestMessage, 1200, 900}, []string{"Tenant acme of hookpack stack prod", "20m0s (threshold 15m0s)", "scripts/inspect -stack prod -tenant acme -summary", "2026-11-28T09:00:00Z"}},
		{Breach{"acme", DeadLetters, 3, 0}, []string{"3 dead-lettered event(s)", "scripts/replay -stack prod -tenant acme list", "redrive"}},
		{Breach{"acme", DeadLettersExpiring, 864001, 864000}, []string{"240h0m1s old", "in about 96h0m0s", "scripts/replay -stack prod -tenant acme list"}},
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
