package chaos

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/tenant"
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

// TestAppliedDeadPerStream: an event dead-lettered at one destination and
// delivered later at another was not applied behind its dead letter; sent
// again to the destination that dead-lettered it, it was.
func TestAppliedDeadPerStream(t *testing.T) {
	for _, tt := range []struct {
		later string // the destination that received the event after the dead letter
		want  int
	}{{healthy, 0}, {rated, 1}} {
		ev := &event{tenant: destTenant, id: "e0", conv: "c", typ: "invoice.paid", accepted: true}
		w := &workload{all: map[string]*event{destTenant + "/e0": ev}, dups: map[*event][]delivery{}}
		f := newFaults(1, Rates{}, 0)
		tgt := newTarget(nil, f, w.isPoison, 0)
		sent := time.Now()
		tgt.apply(destTenant, rated, "k-all", body{EventID: "e0"}, "e0")
		tgt.lastAt[destTenant+"/e0@"+rated] = sent.Add(-time.Second)
		tgt.apply(destTenant, tt.later, "k-later", body{EventID: "e0"}, "e0")
		r := &Report{}
		r.compute(w, &sender{answers: map[string]int{}}, tgt, newCustomEffects(f, w.isPoison, f.chained, 0), f,
			[]deadLetter{{tenant: destTenant, eventID: "e0", reason: "past the destination's retry horizon", stream: rated, sent: sent}}, nil)
		if len(r.AppliedDead) != tt.want {
			t.Errorf("dead-lettered at %s, received later at %s: applied behind its dead letter %v, want %d", rated, tt.later, r.AppliedDead, tt.want)
		}
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
// missing, a second over the rate plus the burst, a 429 storm and a
// request to down while paused each fail the run.
func TestDestinations(t *testing.T) {
	ds := destinations("", nil, true)
	invoice := &event{tenant: destTenant, id: "i", conv: "c", seq: 0, typ: "invoice.paid", accepted: true}
	ticket := &event{tenant: destTenant, id: "t", conv: "c", seq: 1, typ: "ticket.opened", accepted: true}
	if got := expected(ds, invoice); !slices.Equal(got, []string{healthy, down, rated}) {
		t.Fatalf("expected(invoice) = %v", got)
	}
	closed := &event{tenant: destTenant, id: "c", conv: "c", seq: 2, typ: "ticket.closed", accepted: true}
	for _, ev := range []*event{ticket, closed} {
		if got := expected(ds, ev); !slices.Equal(got, []string{healthy, rated}) {
			t.Fatalf("expected(%s) = %v", ev.typ, got)
		}
	}
	type arrival struct {
		dest, id string
		second   int
	}
	all := []arrival{{healthy, "i", 0}, {down, "i", 0}, {rated, "i", 0}, {healthy, "t", 1}, {rated, "t", 1}, {healthy, "c", 1}, {rated, "c", 1}}
	p := newPhases(DefaultPhase)
	tests := []struct {
		name     string
		arrivals []arrival
		extra    int           // more requests to the rated destination in second 2
		tooMany  time.Duration // gap between 60 429s (0: none)
		want     [5]int        // lost, misrouted, over the rate, storms, paused
	}{
		{name: "every event where its filter sends it", arrivals: all},
		{name: "missing at down: lost", arrivals: slices.Delete(slices.Clone(all), 1, 2), want: [5]int{1, 0, 0, 0, 0}},
		{name: "a ticket its events admit at down: misrouted", arrivals: append(slices.Clone(all), arrival{down, "t", 1}), want: [5]int{0, 1, 0, 0, 0}},
		{name: "a ticket its where condition admits at down: misrouted", arrivals: append(slices.Clone(all), arrival{down, "c", 1}), want: [5]int{0, 1, 0, 0, 0}},
		{name: "rate plus burst in a second: within", arrivals: all, extra: destRate + destBurst},
		{name: "one more: over the rate", arrivals: all, extra: destRate + destBurst + 1, want: [5]int{0, 0, 1, 0, 0}},
		{name: "down's target hears nothing while paused", arrivals: append(slices.Clone(all), arrival{down, "i", int(p.pauseFrom / time.Second)}, arrival{down, "i", int(p.faultUntil / time.Second)})},
		{name: "a request to down after its pause took hold: failed", arrivals: append(slices.Clone(all), arrival{down, "i", int(p.faultUntil/time.Second) - 1}), want: [5]int{0, 0, 0, 0, 1}},
		{name: "60 429s a second apart: paced, no storm", arrivals: all, tooMany: time.Second},
		{name: "60 429s in a row: storm", arrivals: all, tooMany: 10 * time.Millisecond, want: [5]int{0, 0, 0, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &workload{all: map[string]*event{destTenant + "/i": invoice, destTenant + "/t": ticket, destTenant + "/c": closed}}
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
			r := &Report{Drained: true, phases: p}
			r.computeDestinations(w, tgt, newCustomEffects(nil, nil, nil, 0), ds, nil)
			r.Lost = slices.DeleteFunc(r.Lost, func(s string) bool { return strings.HasSuffix(s, "(custom effects)") })
			r.Slow = nil // TestLatency's
			got := [5]int{len(r.Lost), len(r.Misrouted), len(r.OverRate), len(r.Storms), len(r.Paused)}
			if got != tt.want || r.Failed() != (tt.want != [5]int{}) {
				t.Errorf("lost, misrouted, over the rate, storms, paused = %v (failed %v), want %v", got, r.Failed(), tt.want)
			}
			var out strings.Builder
			r.Write(&out)
			if !strings.Contains(out.String(), "destinations of "+destTenant) || !strings.Contains(out.String(), "requests per second") {
				t.Errorf("report lacks the destinations:\n%s", out.String())
			}
		})
	}
}

// TestDownFilter: the filter the worker reads sends down what the harness
// expects (the invoices) for every type zeta sends, and each half of it
// (its events, its where condition) is needed for that: read alone, each
// sends down a ticket, which the run would count as misrouted.
func TestDownFilter(t *testing.T) {
	ds := destinations("", nil, true)
	f := downFilter()
	halves := map[string]*route.Filter{"events": {Events: f.Events}, "where": {Where: f.Where}}
	admits := map[string][]string{}
	for i, typ := range destTypes {
		ev := &event{tenant: destTenant, id: typ, conv: "c", seq: i, typ: typ}
		var got []string
		for _, d := range (tenant.Outbound{Destinations: ds}).Match(route.NewEvent(providerName, typ, []byte(ev.body()))) {
			got = append(got, d.Name)
		}
		if want := expected(ds, ev); !slices.Equal(got, want) {
			t.Errorf("%s: the worker's filters send it to %v, the harness expects %v", typ, got, want)
		}
		for half, h := range halves {
			if h.Match(route.NewEvent(providerName, typ, []byte(ev.body()))) {
				admits[half] = append(admits[half], typ)
			}
		}
	}
	for half, want := range map[string][]string{"events": {"invoice.paid", "ticket.opened", "invoice.created"}, "where": {"invoice.paid", "invoice.created", "ticket.closed"}} {
		if !slices.Equal(admits[half], want) {
			t.Errorf("down's %s alone admits %v, want %v", half, admits[half], want)
		}
	}
}

// TestLatency pins the healthy destination's latency check: a faulty
// phase whose p99 exceeds 1.5× the fault-free one's fails the run, one
// within it does not; deliveries an injected process fault touched are
// left out; too few deliveries in a phase fail it too.
func TestLatency(t *testing.T) {
	start := time.Unix(1000, 0)
	p := newPhases(DefaultPhase)
	tests := []struct {
		name          string
		free, faulty  time.Duration // every delivery's latency in each phase
		n             int           // deliveries per phase
		disturbedSlow bool          // one faulty-phase delivery 12 s, touched by a fault
		tail          int           // faulty-phase deliveries (of n) at 5 s instead
		othersEnd     time.Duration // the other tenants' last accept before the faulty phase's end
		wantFail      bool
	}{
		{name: "same latency", free: 200 * time.Millisecond, faulty: 200 * time.Millisecond, n: 120},
		{name: "within 1.5×", free: 200 * time.Millisecond, faulty: 300 * time.Millisecond, n: 120},
		{name: "over 1.5×: the others held it back", free: 200 * time.Millisecond, faulty: 301 * time.Millisecond, n: 120, wantFail: true},
		{name: "a slow tail: its p99 is judged", free: 200 * time.Millisecond, faulty: 200 * time.Millisecond, n: 120, tail: 3, wantFail: true},
		{name: "over 1.5×, too few deliveries for a p99: not judged", free: 200 * time.Millisecond, faulty: 301 * time.Millisecond, n: 30},
		{name: "a slow delivery a process fault touched: left out", free: 200 * time.Millisecond, faulty: 200 * time.Millisecond, n: 120, disturbedSlow: true},
		{name: "over 1.5×, the others' load ended in the faulty phase: not judged", free: 200 * time.Millisecond, faulty: 301 * time.Millisecond, n: 120, othersEnd: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, tgt, add := deliveries(start, healthy)
			for i := range tt.n {
				add(fmt.Sprintf("free-%d", i), start.Add(time.Duration(i)*p.faultFrom/time.Duration(tt.n)), tt.free)
				lat := tt.faulty
				if i < tt.tail {
					lat = 5 * time.Second
				}
				add(fmt.Sprintf("faulty-%d", i), start.Add(p.faultFrom+time.Duration(i)*(p.faultUntil-p.faultFrom)/time.Duration(tt.n)), lat)
				add(fmt.Sprintf("after-%d", i), start.Add(p.faultUntil+time.Duration(i)*time.Second), time.Minute) // recovery: not measured
			}
			// The other tenants' last event, accepted as the faulty phase ends.
			w.all["alpha/last"] = &event{tenant: "alpha", id: "last", accepted: true, acceptedAt: start.Add(p.faultUntil - tt.othersEnd)}
			if tt.disturbedSlow {
				add("slow", start.Add(p.faultFrom), 12*time.Second)
				tgt.disturbed[destTenant+"/slow@"+healthy] = true
			}
			r := &Report{Drained: true, phases: p}
			r.computeLatency(w, tgt)
			if r.Failed() != tt.wantFail {
				t.Errorf("Failed() = %v, want %v (fault-free %+v, faulty %+v, %v)", r.Failed(), tt.wantFail, r.FaultFree, r.Faulty, r.Slow)
			}
			if r.FaultFree.N != tt.n || r.Faulty.N != tt.n || r.Faulty.P50 != tt.faulty || r.FaultFree.P99 != tt.free {
				t.Errorf("fault-free %+v, faulty %+v, want %d deliveries each at p99 %v and %v", r.FaultFree, r.Faulty, tt.n, tt.free, tt.faulty)
			}
			if tt.disturbedSlow && r.Faulty.Left != 1 {
				t.Errorf("faulty phase left out %d, want 1", r.Faulty.Left)
			}
		})
	}
}

// TestDeadLettersPerDestination checks that a dead letter excuses its
// event only at its own stream: at another destination it is lost.
func TestDeadLettersPerDestination(t *testing.T) {
	ds := destinations("", nil, true)
	ev := &event{tenant: destTenant, id: "i", conv: "c", typ: "invoice.paid", accepted: true}
	w := &workload{all: map[string]*event{destTenant + "/i": ev}}
	tgt := newTarget(nil, newFaults(1, Rates{}, 0), w.isPoison, 0)
	tgt.start = time.Unix(1000, 0)
	b := body{EventID: "i"}
	b.Data.Conversation = "c"
	for _, d := range ds {
		tgt.dest(d.Name)
	}
	tgt.apply(destTenant, healthy, "k-healthy", b, "i")
	tgt.apply(destTenant, rated, "k-all", b, "i")
	dead := []deadLetter{{tenant: destTenant, eventID: "i", reason: "gave up", stream: down}, {tenant: destTenant, eventID: "i", reason: "gave up", stream: customStream}}
	r := &Report{Drained: true}
	r.computeDestinations(w, tgt, newCustomEffects(nil, nil, nil, 0), ds, dead)
	if len(r.Lost) != 0 {
		t.Errorf("lost = %v, want none: down and the custom effects dead-lettered it", r.Lost)
	}
	for _, d := range r.Destinations {
		want := 0
		if d.Name == down || d.Name == customStream {
			want = 1
		}
		if d.Dead != want || d.Deliverable != want {
			t.Errorf("%s: %d dead letters, %d deliverable, want %d", d.Name, d.Dead, d.Deliverable, want)
		}
	}
	dead[0].stream = healthy
	r = &Report{Drained: true}
	r.computeDestinations(w, tgt, newCustomEffects(nil, nil, nil, 0), ds, dead)
	if !slices.Equal(r.Lost, []string{destTenant + "/i@" + down}) {
		t.Errorf("lost = %v, want the event at down (its dead letter is healthy's)", r.Lost)
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

// TestRecovery checks the rated destination's bound once it is well
// again: judged on the events accepted recoveredAfter after its squeeze,
// not on those before, nor on too few, nor on one a process fault delayed.
func TestRecovery(t *testing.T) {
	start := time.Unix(1000, 0)
	p := newPhases(DefaultPhase)
	ds := destinations("http://target", nil, true)
	tests := []struct {
		name      string
		lat       time.Duration // every judged delivery's latency
		n         int
		disturbed bool // one more at 5 minutes, touched by a fault
		wantFail  bool
	}{
		{name: "delivered at once", lat: 2 * time.Second, n: 60},
		{name: "held for minutes after the squeeze (a 429 paused MaxPenalty)", lat: 4 * time.Minute, n: 60, wantFail: true},
		{name: "held, too few to judge", lat: 4 * time.Minute, n: 20},
		{name: "one held by a process fault: left out", lat: 2 * time.Second, n: 60, disturbed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, tgt, add := deliveries(start, rated)
			from := start.Add(p.squeezeTo + recoveredAfter)
			for i := range tt.n {
				add(fmt.Sprintf("late-%d", i), from.Add(time.Duration(i)*time.Second), tt.lat)
				add(fmt.Sprintf("throttled-%d", i), start.Add(p.faultFrom+time.Duration(i)*time.Second), 5*time.Minute) // not judged
			}
			if tt.disturbed {
				add("slow", from, 5*time.Minute)
				tgt.disturbed[destTenant+"/slow@"+rated] = true
			}
			r := &Report{Drained: true, phases: p}
			r.computeRecovery(w, tgt, ds)
			if r.Failed() != tt.wantFail || r.Recovered.N != tt.n {
				t.Errorf("Failed() = %v over %+v, want %v over %d deliveries (%v)", r.Failed(), r.Recovered, tt.wantFail, tt.n, r.Stalled)
			}
		})
	}
}

// deliveries returns an empty workload and a target started at start, and
// add, which records destTenant's event id accepted at at and first
// received at dest lat later.
func deliveries(start time.Time, dest string) (*workload, *target, func(id string, at time.Time, lat time.Duration)) {
	w := &workload{all: map[string]*event{}}
	tgt := newTarget(nil, nil, nil, 0)
	tgt.start = start
	return w, tgt, func(id string, at time.Time, lat time.Duration) {
		w.all[destTenant+"/"+id] = &event{tenant: destTenant, id: id, accepted: true, acceptedAt: at}
		tgt.firstAt[destTenant+"/"+id+"@"+dest] = at.Add(lat)
	}
}
