package epoch

import (
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   time.Time
	}{
		{"epoch", time.Unix(0, 0).UTC()},
		{"2026", time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FromSeconds(Seconds(tt.in)); !got.Equal(tt.in) {
				t.Errorf("FromSeconds(Seconds(%v)) = %v", tt.in, got)
			}
			if got := FromMillis(Millis(tt.in)); !got.Equal(tt.in) {
				t.Errorf("FromMillis(Millis(%v)) = %v", tt.in, got)
			}
			if got := FromMicros(Micros(tt.in)); !got.Equal(tt.in) {
				t.Errorf("FromMicros(Micros(%v)) = %v", tt.in, got)
			}
			if Micros(tt.in) != Millis(tt.in)*1000 {
				t.Errorf("Micros(%v) = %d, want %d", tt.in, Micros(tt.in), Millis(tt.in)*1000)
			}
			if Millis(tt.in) != Seconds(tt.in)*1000 {
				t.Errorf("Millis(%v) = %d, want %d", tt.in, Millis(tt.in), Seconds(tt.in)*1000)
			}
		})
	}
}
