package lease

import (
	"testing"
	"time"
)

func TestWithDefaults(t *testing.T) {
	clock := func() time.Time { return time.Unix(1, 0) }
	for _, tt := range []struct {
		name                  string
		in                    Options
		wantRetention, wantLs time.Duration
		wantNow               time.Time
	}{
		{"zero takes the defaults", Options{}, time.Hour, time.Minute, time.Time{}},
		{"negative takes the defaults", Options{Retention: -1, Lease: -time.Second}, time.Hour, time.Minute, time.Time{}},
		{"set values stay", Options{Retention: 2 * time.Hour, Lease: 5 * time.Second, Now: clock}, 2 * time.Hour, 5 * time.Second, time.Unix(1, 0)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.WithDefaults(time.Hour, time.Minute)
			if got.Retention != tt.wantRetention || got.Lease != tt.wantLs || got.Now == nil {
				t.Fatalf("WithDefaults() = %+v, want retention %v, lease %v and a clock", got, tt.wantRetention, tt.wantLs)
			}
			if !tt.wantNow.IsZero() && !got.Now().Equal(tt.wantNow) {
				t.Errorf("WithDefaults().Now() = %v, want the given clock's %v", got.Now(), tt.wantNow)
			}
		})
	}
}

func TestToken(t *testing.T) {
	a, b := Token(), Token()
	if len(a) != 32 || a == b {
		t.Errorf("Token() = %q, %q; want two different 32-digit tokens", a, b)
	}
}

func TestClock(t *testing.T) {
	c := NewClock()
	start := c.Now()
	if start.Before(time.Now().Add(-2*time.Second)) || start.Nanosecond() != 0 {
		t.Errorf("NewClock().Now() = %v, want the current second", start)
	}
	c.Advance(time.Minute)
	if got := c.Now(); !got.Equal(start.Add(time.Minute)) {
		t.Errorf("Now() after Advance(1m) = %v, want %v", got, start.Add(time.Minute))
	}
}
