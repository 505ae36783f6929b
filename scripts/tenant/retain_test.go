//go:build long

// Behind the "long" build tag (make test-long): a dozen more aws CLI calls,
// which take minutes on a loaded machine.

package tenant

import (
	"strings"
	"testing"
)

// TestRemoveKeepsDeadLetters: a forced remove deletes the stack and the
// tenant's pending messages, but its DLQ holding dead letters is retained
// (DeletionPolicy: Retain), and adding the tenant again is refused until
// someone deals with them.
func TestRemoveKeepsDeadLetters(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// A core stack of its own: TestAddIngestRemove, running alongside,
	// expects the shared core's tenant list to hold its tenant alone.
	e.ownCore(t, "hr")
	q, dlq := e.core+"_globex.fifo", e.core+"_globex-dlq.fifo"
	if out, err := e.tenant(t, nil, "add", "globex", "in.json"); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	e.send(t, q)
	e.send(t, dlq)
	if out, err := e.tenant(t, nil, "remove", "globex", "--force"); err != nil || !strings.Contains(out, "kept: "+dlq+" (1 messages)") {
		t.Fatalf("remove --force = %v\n%s\nwant success reporting the kept DLQ", err, out)
	}
	if n, m := e.depth(t, q), e.depth(t, dlq); n != -1 || m != 1 {
		t.Errorf("after remove --force: queue depth %d (want deleted, -1), DLQ depth %d (want kept, 1)", n, m)
	}
	out, err := e.tenant(t, nil, "add", "globex", "in.json")
	if err == nil || !strings.Contains(out, dlq+" from an earlier removal still exists (1 messages)") {
		t.Fatalf("add over a kept DLQ = %v %s, want refusal", err, out)
	}
}
