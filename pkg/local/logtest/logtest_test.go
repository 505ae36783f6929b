package logtest

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

func TestBuffer(t *testing.T) {
	var b Buffer
	log := slog.New(slog.NewJSONHandler(&b, nil))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { log.Info("message", "outcome", "applied") })
	}
	wg.Wait()
	log.Info("escaped", "value", "s\u0000cret")
	lines := b.Lines(t)
	if len(lines) != 9 || lines[0]["outcome"] != "applied" || lines[8]["value"] != "s\x00cret" {
		t.Fatalf("Lines() = %v", lines)
	}
	if v := b.Values(t); !strings.Contains(v, "s\x00cret") || strings.Contains(v, `\u0000`) {
		t.Errorf("Values() = %q, want escapes undone", v)
	}
	if strings.Count(b.String(), "\n") != 9 {
		t.Errorf("String() = %q", b.String())
	}
}
