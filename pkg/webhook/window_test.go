package webhook

import (
	"errors"
	"testing"
	"time"
)

func TestWindowCheck(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	day := Covering(24 * time.Hour)
	onlyOld := Window{Past: 5 * time.Minute, Future: AnyFuture}
	for _, tt := range []struct {
		name string
		w    Window
		ts   time.Time
		want error
	}{
		{"covering: first signature at the horizon", day, now.Add(-24 * time.Hour), nil},
		{"covering: horizon plus skew", day, now.Add(-24*time.Hour - Skew), nil},
		{"covering: beyond", day, now.Add(-24*time.Hour - Skew - time.Second), ErrStale},
		{"covering: skew ahead", day, now.Add(Skew), nil},
		{"covering: beyond skew ahead", day, now.Add(Skew + time.Second), ErrStale},
		{"only old: a day ahead", onlyOld, now.Add(24 * time.Hour), nil},
		{"only old: too old", onlyOld, now.Add(-5*time.Minute - time.Second), ErrStale},
		{"symmetric: ahead", Symmetric(time.Minute), now.Add(time.Minute + time.Second), ErrStale},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.w.Check(tt.ts, now); !errors.Is(err, tt.want) {
				t.Errorf("%+v.Check(now%+v) = %v, want %v", tt.w, tt.ts.Sub(now), err, tt.want)
			}
		})
	}
}

func TestWindowTenant(t *testing.T) {
	w := Window{Past: 24 * time.Hour, Future: AnyFuture}
	for _, tt := range []struct {
		name     string
		settings map[string]string
		want     Window
		err      error
	}{
		{"unset keeps the sender's rule", nil, w, nil},
		{"tolerance replaces Past only", map[string]string{"tolerance": "10m"}, Window{Past: 10 * time.Minute, Future: AnyFuture}, nil},
		{"bad tolerance", map[string]string{"tolerance": "-1s"}, Window{}, ErrMisconfigured},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.Tenant(Config{Settings: tt.settings})
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("Tenant(%v) = %+v, %v; want %+v, %v", tt.settings, got, err, tt.want, tt.err)
			}
		})
	}
}
