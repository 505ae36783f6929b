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
				tgt.apply("alpha", "", a.key, b, a.id)
			}
			for _, k := range tt.resentAfterCompletion {
				f.completed[k] = time.Now().Add(-time.Second)
				tgt.apply("alpha", "", k, body{}, "")
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

// TestDestinations pins the destination checks on hand-made arrivals: an
// event at a destination its filter excludes, an event its filter selects
// missing, a second over the rate plus the burst, and a 429 storm each
// fail the run.
func TestDestinations(t *testing.T) {
	ds := destinations("", nil, true)
	gold := &event{tenant: destTenant, id: "g", conv: "c", seq: 0, typ: "invoice.paid", tier: "gold", accepted: true}
	plain := &event{tenant: destTenant, id: "p", conv: "c", seq: 1, typ: "ticket.opened", tier: "standard", accepted: true}
	if got := expected(ds, gold); !slices.Equal(got, []string{"billing", "vip", rated}) {
		t.Fatalf("expected(gold invoice) = %v", got)
	}
	if got := expected(ds, plain); !slices.Equal(got, []string{rated}) {
		t.Fatalf("expected(standard ticket) = %v", got)
	}
	type arrival struct {
		dest, id string
		second   int
	}
	all := []arrival{{"billing", "g", 0}, {"vip", "g", 0}, {rated, "g", 0}, {rated, "p", 1}}
	tests := []struct {
		name     string
		arrivals []arrival
		extra    int           // more requests to the rated destination in second 2
		tooMany  time.Duration // gap between 60 429s (0: none)
		want     [4]int        // lost, misrouted, over the rate, storms
	}{
		{name: "every event where its filter sends it", arrivals: all},
		{name: "missing at vip: lost", arrivals: []arrival{{"billing", "g", 0}, {rated, "g", 0}, {rated, "p", 1}}, want: [4]int{1, 0, 0, 0}},
		{name: "a standard ticket at vip: misrouted", arrivals: append(slices.Clone(all), arrival{"vip", "p", 1}), want: [4]int{0, 1, 0, 0}},
		{name: "rate plus burst in a second: within", arrivals: all, extra: destRate + destBurst},
		{name: "one more: over the rate", arrivals: all, extra: destRate + destBurst + 1, want: [4]int{0, 0, 1, 0}},
		{name: "60 429s a second apart: paced, no storm", arrivals: all, tooMany: time.Second},
		{name: "60 429s in a row: storm", arrivals: all, tooMany: 10 * time.Millisecond, want: [4]int{0, 0, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &workload{all: map[string]*event{destTenant + "/g": gold, destTenant + "/p": plain}}
			tgt := newTarget(nil, newFaults(1, Rates{}, 0), w.isPoison, 0)
			tgt.start = time.Unix(1000, 0)
			for _, a := range tt.arrivals {
				st := tgt.dest(a.dest)
				st.requests++
				st.perSecond[a.second]++
				ev := w.all[destTenant+"/"+a.id]
				b := body{EventID: a.id}
				b.Data.Conversation, b.Data.Seq = ev.conv, ev.seq
				tgt.apply(destTenant, a.dest, a.dest+a.id, b, a.id)
			}
			tgt.dest(rated).perSecond[2] += tt.extra
			for i := range 60 * min(1, int(tt.tooMany)) {
				st := tgt.dest(rated)
				st.tooMany = append(st.tooMany, tgt.start.Add(time.Duration(i)*tt.tooMany))
			}
			r := &Report{Drained: true}
			r.computeDestinations(w, tgt, ds, nil)
			got := [4]int{len(r.Lost), len(r.Misrouted), len(r.OverRate), len(r.Storms)}
			if got != tt.want || r.Failed() != (tt.want != [4]int{}) {
				t.Errorf("lost, misrouted, over the rate, storms = %v (failed %v), want %v", got, r.Failed(), tt.want)
			}
			var out strings.Builder
			r.Write(&out)
			if !strings.Contains(out.String(), "destinations of "+destTenant) || !strings.Contains(out.String(), "requests per second") {
				t.Errorf("report lacks the destinations:\n%s", out.String())
			}
		})
	}
}

func TestSparkline(t *testing.T) {
	for _, tt := range []struct {
		counts     []int
		width, top int
		want       string
	}{
		{[]int{0, 1, 4, 8}, 10, 8, " ▁▄█"},
		{[]int{1, 8, 0, 0, 4, 2}, 3, 8, "█ ▄"},
		{nil, 10, 8, ""},
	} {
		if got := sparkline(tt.counts, tt.width, tt.top); got != tt.want {
			t.Errorf("sparkline(%v, %d, %d) = %q, want %q", tt.counts, tt.width, tt.top, got, tt.want)
		}
	}
}
