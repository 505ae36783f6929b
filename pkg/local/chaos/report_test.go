package chaos

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCompute pins the report's definitions on hand-made outcomes.
func TestCompute(t *testing.T) {
	type applied struct {
		conv, id, key string
		seq           int
	}
	tests := []struct {
		name                  string
		poison                []string // event ids the target refuses
		accepted              []string // event ids some delivery of which got a 2xx
		applied               []applied
		resentAfterCompletion []string // keys re-sent after the ledger completed them
		dead                  []deadLetter
		wantN                 [5]int // lost, doubled, violations, undeliverable, no reason
	}{{
		name:     "all applied in order",
		accepted: []string{"e0", "e1", "e2"},
		applied:  []applied{{"c", "e0", "k0", 0}, {"c", "e1", "k1", 1}, {"c", "e2", "k2", 2}},
	}, {
		name:     "accepted, not applied, not dead-lettered: lost",
		accepted: []string{"e0", "e1"},
		applied:  []applied{{"c", "e0", "k0", 0}},
		wantN:    [5]int{1, 0, 0, 0, 0},
	}, {
		name:     "never accepted and never applied: not lost",
		accepted: []string{"e0"},
		applied:  []applied{{"c", "e0", "k0", 0}},
	}, {
		name:     "poison dead-lettered with a reason, followers in order: clean",
		poison:   []string{"e1"},
		accepted: []string{"e0", "e1", "e2"},
		applied:  []applied{{"c", "e0", "k0", 0}, {"c", "e2", "k2", 2}},
		dead:     []deadLetter{{tenant: "alpha", eventID: "e1", reason: "422"}},
	}, {
		name:     "a higher sequence before a lower one: violation",
		accepted: []string{"e0", "e1", "e2"},
		applied:  []applied{{"c", "e0", "k0", 0}, {"c", "e2", "k2", 2}, {"c", "e1", "k1", 1}},
		wantN:    [5]int{0, 0, 1, 0, 0},
	}, {
		name:     "dead-lettered, then applied late by a duplicate invocation: out of the order check",
		accepted: []string{"e0", "e1", "e2"},
		applied:  []applied{{"c", "e0", "k0", 0}, {"c", "e2", "k2", 2}, {"c", "e1", "k1", 1}},
		dead:     []deadLetter{{tenant: "alpha", eventID: "e1", reason: "message near the end of its queue retention"}},
		wantN:    [5]int{0, 0, 0, 1, 0},
	}, {
		name:     "conversations are ordered independently",
		accepted: []string{"a0", "b0", "a1", "b1"},
		applied:  []applied{{"a", "a0", "ka0", 0}, {"b", "b0", "kb0", 0}, {"b", "b1", "kb1", 1}, {"a", "a1", "ka1", 1}},
	}, {
		name:     "one event under two keys: doubled",
		accepted: []string{"e0"},
		applied:  []applied{{"c", "e0", "k0", 0}, {"c", "e0", "k0-other", 0}},
		wantN:    [5]int{0, 1, 0, 0, 0},
	}, {
		name:                  "re-sent after the ledger completed it: doubled",
		accepted:              []string{"e0"},
		applied:               []applied{{"c", "e0", "k0", 0}},
		resentAfterCompletion: []string{"k0"},
		wantN:                 [5]int{0, 1, 0, 0, 0},
	}, {
		name:                  "re-sent after its dead-lettered message was acked: at-least-once, not doubled",
		accepted:              []string{"e0"},
		applied:               []applied{{"c", "e0", "k0", 0}},
		resentAfterCompletion: []string{"k0"},
		dead:                  []deadLetter{{tenant: "alpha", eventID: "e0", reason: "message near the end of its queue retention"}},
		wantN:                 [5]int{0, 0, 0, 1, 0},
	}, {
		name:     "deliverable event dead-lettered, and one without a reason",
		accepted: []string{"e0", "e1"},
		dead:     []deadLetter{{tenant: "alpha", eventID: "e0", reason: "gave up after 15 attempts"}, {tenant: "alpha", eventID: "e1"}},
		wantN:    [5]int{0, 0, 0, 2, 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &workload{all: map[string]*event{}, dups: map[*event][]delivery{}}
			for _, id := range []string{"e0", "e1", "e2", "a0", "a1", "b0", "b1"} {
				conv := id[:1]
				if conv == "e" {
					conv = "c"
				}
				w.all["alpha/"+id] = &event{tenant: "alpha", id: id, conv: conv, seq: int(id[1] - '0'), poison: slices.Contains(tt.poison, id), accepted: slices.Contains(tt.accepted, id)}
			}
			f := newFaults(1, Rates{}, 0)
			tgt := newTarget(nil, f, w.isPoison, 0)
			for _, a := range tt.applied {
				b := body{EventID: a.id}
				b.Data.Conversation, b.Data.Seq = a.conv, a.seq
				tgt.apply("alpha", a.key, b, a.id)
			}
			for _, k := range tt.resentAfterCompletion {
				f.completed[k] = time.Now().Add(-time.Second)
				tgt.apply("alpha", k, body{}, "")
			}
			r := &Report{}
			r.compute(w, &sender{answers: map[string]int{}}, tgt, newCustomEffects(f, w.isPoison, f.chained, 0), f, tt.dead, nil)
			got := [5]int{len(r.Lost), len(r.Doubled), len(r.Violations), len(r.Undeliverable), r.NoReason}
			if got != tt.wantN {
				t.Errorf("lost, doubled, violations, undeliverable, no reason = %v, want %v (%+v)", got, tt.wantN, r)
			}
		})
	}
}

// TestReportTable: one row per line, whatever the reasons hold.
func TestReportTable(t *testing.T) {
	w := &workload{all: map[string]*event{"alpha/e0": {tenant: "alpha", id: "e0", poison: true, accepted: true}}, dups: map[*event][]delivery{}}
	f := newFaults(1, Rates{}, 0)
	r := &Report{Seed: 7, Drained: true}
	r.compute(w, &sender{answers: map[string]int{}}, newTarget(nil, f, w.isPoison, 0), newCustomEffects(f, w.isPoison, f.chained, 0), f,
		[]deadLetter{{tenant: "alpha", eventID: "e0", reason: "effect forward: answered 422\n  fail alpha|forward|e0: UpdateItem timed out"}}, nil)
	var b strings.Builder
	r.Write(&b)
	want := "dead-lettered            1  0 of events the target would accept, 0 without a reason\n" +
		"                         1  effect forward: answered 422 ; fail alpha|forward|e0: UpdateItem timed out\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("report table:\n%s\nwant the rows\n%s", b.String(), want)
	}
}

// TestDiceReplays: a decision depends on the seed, the stream and its draw
// count only.
func TestDiceReplays(t *testing.T) {
	a, b, c := newDice(7), newDice(7), newDice(8)
	b.roll("other") // another stream's draws change nothing
	for i := range 5 {
		x, y, z := a.roll("s"), b.roll("s"), c.roll("s")
		if x != y {
			t.Errorf("draw %d: seed 7 gave %v and %v", i, x, y)
		}
		if x == z || x < 0 || x >= 1 {
			t.Errorf("draw %d: seed 7 gave %v, seed 8 %v", i, x, z)
		}
	}
}

func TestTemplateDefault(t *testing.T) {
	for _, p := range []string{"MaxReceiveCount", "WorkerMaxAttempts"} {
		n, err := templateDefault("../../../template.yaml", p)
		if err != nil || n <= 0 {
			t.Errorf("templateDefault(%s) = %d, %v", p, n, err)
		}
	}
	if _, err := templateDefault("../../../template.yaml", "NoSuchParameter"); err == nil {
		t.Error("templateDefault(NoSuchParameter) = nil error")
	}
}
