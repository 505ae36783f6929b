package deadline

import (
	"context"
	"testing"
	"time"
)

func TestHalfLeft(t *testing.T) {
	tests := []struct {
		name string
		left time.Duration // 0: no deadline
		want time.Duration
	}{
		{"no deadline", 0, 0},
		{"ten seconds left", 10 * time.Second, 5 * time.Second},
		{"past the deadline", -time.Second, -time.Second / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := context.Background()
			if tt.left != 0 {
				var cancel context.CancelFunc
				parent, cancel = context.WithDeadline(parent, time.Now().Add(tt.left))
				defer cancel()
			}
			ctx, cancel := HalfLeft(parent)
			d, ok := ctx.Deadline()
			if tt.left == 0 {
				if ok {
					t.Fatalf("HalfLeft(no deadline) has deadline %v", d)
				}
				cancel()
				if ctx.Err() == nil {
					t.Error("HalfLeft's cancel did not cancel the context")
				}
				return
			}
			defer cancel()
			if got := time.Until(d); got > tt.want || got < tt.want-time.Second {
				t.Errorf("HalfLeft(%v left) leaves %v, want about %v", tt.left, got, tt.want)
			}
		})
	}
}
