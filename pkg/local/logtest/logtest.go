// Package logtest captures the JSON lines a handler's slog logger writes,
// for tests that assert on them: what was logged, and what never may be
// (secrets, signatures, bodies).
package logtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Buffer collects log lines; it is safe for concurrent use (handlers log
// from server and worker goroutines).
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines decodes every line; a line that is not a JSON object fails t.
func (b *Buffer) Lines(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(strings.NewReader(b.String()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, b)
		}
		out = append(out, m)
	}
	return out
}

// Values returns every value of every line, JSON escapes undone, each
// followed by a NUL: what a reader of the log sees. Leak checks search it,
// since an escape can both hide a secret ("\u0073ecret") and look like
// something else ("\u0000…" like a body of zeros).
func (b *Buffer) Values(t testing.TB) string {
	t.Helper()
	var s strings.Builder
	for _, line := range b.Lines(t) {
		for _, v := range line {
			fmt.Fprintf(&s, "%v\x00", v)
		}
	}
	return s.String()
}
