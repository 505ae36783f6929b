package devstack

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestPretty(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewPretty(&buf))
	tests := []struct {
		name  string
		log   func()
		wants []string
	}{
		{"ingest accepted", func() {
			log.Info("webhook", "tenantId", "demo", "provider", "stripe", "eventId", "evt_1", "outcome", "accepted", "status", 200, "durationMs", 12.5, "_aws", map[string]any{"x": 1}, "Webhooks", 1)
		}, []string{"ingest", "demo/stripe", "evt_1", "received → verified → queued → recorded", "200", "12.5ms"}},
		{"worker dead-lettered", func() {
			log.Error("message", "tenantId", "demo", "provider", "hmac", "eventId", "evt_p", "outcome", "dead_lettered", "attempt", 1, "groupId", "g", "durationMs", 3.0, "error", "answered 422")
		}, []string{"worker", "DEAD-LETTERED", "attempt 1", "error: answered 422"}},
		{"worker processed (DEBUG)", func() {
			log.Debug("message", "tenantId", "demo", "provider", "stripe", "eventId", "evt_1", "outcome", "processed", "receiveCount", 2, "groupId", "g", "durationMs", 3.0)
		}, []string{"worker", "demo/stripe", "evt_1", "effect applied", "receive 2"}},
		{"target", func() {
			log.With("stage", "target", "tenantId", "demo", "provider", "github", "eventId", "d1").Info("target: effect applied")
		}, []string{"target", "demo/github", "d1", "effect applied"}},
	}
	t.Run("batch metrics are not shown", func(t *testing.T) {
		buf.Reset()
		log.Info("batch", "outcome", "processed", "Messages", 10, "_aws", map[string]any{"x": 1})
		if buf.Len() != 0 {
			t.Errorf("batch line shown: %q", buf.String())
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf.Reset()
			tt.log()
			line := buf.String()
			for _, w := range tt.wants {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
			if strings.Contains(line, "_aws") || strings.Contains(line, "Webhooks") || strings.Count(line, "\n") != 1 {
				t.Errorf("line %q is not one clean line", line)
			}
		})
	}
}
