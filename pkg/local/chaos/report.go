package chaos

import (
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// Report is what a run saw.
type Report struct {
	Seed                         uint64
	MaxReceiveCount, MaxAttempts int
	// Pollers is the pollers of each tenant queue (Options.Pollers).
	Pollers int
	// BacklogBound is the sender's gate (see gate); Backlog the highest
	// visible backlog it read of each tenant's queue.
	BacklogBound int
	Backlog      map[string]int

	Deliveries    int            // deliveries the providers sent (not counting retries)
	Requests      int            // HTTP requests, retries included
	Answers       map[string]int // HTTP status (or "connection error") → count
	Unique        int            // distinct events
	Large         int            // of them, bodies over 1 MiB (through S3)
	Accepted      int            // events some delivery of which got a 2xx
	NotAccepted   int            // events never accepted before the senders gave up
	Applied       int            // effects the target applied
	CustomApplied int            // custom effects applied (customEffects)
	CustomReruns  int            // custom effects run again after their instance died between the effect and its record
	Poison        int            // events the target refuses
	Lost          []string       // accepted, never applied, not dead-lettered
	Expired       []string       // the outage tenant's: received past its retention, or never applied nor dead-lettered
	Doubled       []string       // applied twice (see compute)
	Resent        int            // requests after a 2xx, absorbed by the Idempotency-Key
	Violations    []string       // a higher sequence applied before a lower one
	// AppliedDead counts events in the DLQ at the end that a copy sent to
	// the target, or ran a custom effect of, after their dead letter was
	// sent: applied behind their dead letter (docs/ledger.md, one lifecycle
	// per event). It fails the run.
	AppliedDead   []string
	DeadLettered  map[string]int // reason → count
	Undeliverable []string       // dead-lettered though the target would accept it
	NoReason      int            // dead letters without a reason (SQS's own redrive)
	Faults        map[Kind]int
	SendTime      time.Duration
	DrainTime     time.Duration
	Drained       bool
	Problems      []string
	// IAM is the check of every AWS request against template.yaml's roles.
	IAM IAM
	// Destinations are destTenant's; Misrouted lists events a destination
	// received that its filter excludes, OverRate destinations whose
	// target saw more requests in a second than the rate plus the burst,
	// Storms 429 episodes longer than stormBound.
	Destinations                []DestinationReport
	Misrouted, OverRate, Storms []string
	// Fault-free and Faulty are the healthy destination's delivery
	// latencies (see computeLatency); Slow holds its breach, if any.
	FaultFree, Faulty Latency
	Slow              []string
	// Recovered is the rated destination's latency for the events
	// accepted from recoveredFrom on (see computeRecovery); Stalled holds
	// its breach of recoveredBound, if any.
	Recovered Latency
	Stalled   []string
	// OthersUntil is when, from the start of the run, the other tenants'
	// last event was accepted: their load lasted that long.
	OthersUntil time.Duration
	// Paused lists requests down's target received while it was paused
	// (after phases.quiet), and a pause or resume that failed.
	Paused []string
	// phases are destTenant's.
	phases phases
}

// compute fills the report from what the run recorded.
//
// Definitions:
//   - lost: an event some delivery of which got a 2xx (the pack promised to
//     process it) that was never applied (by the target, or every custom
//     effect of it) and that is in no DLQ;
//   - expired: the same for an event of the outage tenant, or one whose
//     message was received past its queue retention (SQS would have
//     deleted it unseen);
//   - doubled: an event the target received under two different
//     Idempotency-Keys (a receiver that deduplicates by the key, as the pack
//     asks, applies it twice), or whose effect was sent again after the
//     pack had recorded it done — its ledger completion stored, or its
//     message acked (deleted) — so nothing should have run it again. Re-sends before that point are the at-least-once delivery the
//     key exists for: counted as Resent, not as doubled. A custom effect is
//     doubled when it runs again after a run of it returned nil, whatever
//     was acked — unless every instance whose run returned nil died before
//     the ledger stored the completion (counted as CustomReruns: the crash
//     window between an effect and its record, which no ledger closes);
//   - order violation: within a conversation, an event applied after one
//     with a higher sequence number had been applied. The providers send a
//     conversation's event n+1 only after event n was accepted, so the
//     queue order is the sequence order. Events that were never applied —
//     poison events and anything else dead-lettered — are not in the
//     applied order and cannot cause a violation; the events after them
//     are still checked against each other and against those before. An
//     event in the DLQ at the end that reached the target after its dead
//     letter was sent broke the lifecycle rule (a dead-lettered event runs
//     only through a replay): counted as AppliedDead, which fails the run.
func (r *Report) compute(w *workload, s *sender, t *target, c *customEffects, f *Faults, dead []deadLetter, expired []string) {
	r.Unique = len(w.all)
	r.Deliveries = r.Unique
	for _, d := range w.dups {
		r.Deliveries += len(d)
	}
	s.mu.Lock()
	r.Requests, r.Answers = s.attempts, s.answers
	s.mu.Unlock()
	r.Faults = f.Counts()
	for _, ev := range w.all {
		if ev.poison {
			r.Faults[Poison]++
		}
		if ev.large {
			r.Large++
		}
	}

	appliedEvents, doubled, reruns, order, customApplied := c.outcomes()
	r.CustomApplied, r.CustomReruns = customApplied, reruns
	r.Doubled = append(r.Doubled, doubled...)
	r.Expired = append(r.Expired, expired...)
	t.mu.Lock()
	defer t.mu.Unlock()
	r.Applied = t.applied
	maps.Copy(order, t.order)
	for ev, keys := range t.byEvent {
		appliedEvents[ev] = true
		if len(keys) > 1 {
			r.Doubled = append(r.Doubled, fmt.Sprintf("%s applied under %d Idempotency-Keys", ev, len(keys)))
		}
	}
	deadEvent := map[string]bool{} // events with a dead letter
	for _, d := range dead {
		deadEvent[d.tenant+"/"+d.eventID] = true
	}
	for _, e := range t.byKey {
		r.Resent += e.resent
		// The ack of a message the worker dead-lettered records nothing done:
		// a copy of it still in a concurrent invocation may send it again
		// with the same key (at-least-once, absorbed by the receiver).
		if e.after > 0 && (f.byLedger(e.key) || !deadEvent[e.tenant+"/"+e.eventID]) {
			r.Doubled = append(r.Doubled, fmt.Sprintf("%s/%s%s sent again %d time(s) after the pack recorded it done", e.tenant, e.eventID, at(e.dest), e.after))
		}
	}
	deadSeq := map[string]map[int]bool{} // conversation → dead-lettered sequences
	for _, d := range dead {
		if ev, ok := w.all[d.tenant+"/"+d.eventID]; ok {
			conv := ev.tenant + "/" + ev.conv
			if deadSeq[conv] == nil {
				deadSeq[conv] = map[int]bool{}
			}
			deadSeq[conv][ev.seq] = true
		}
	}
	// A copy that reached the target or ran a custom effect after the
	// event's dead letter was sent (and the dead letter is still there, so
	// no replay) applied the event behind it.
	// Per stream: a dead letter of one destination says nothing of the
	// event's other destinations.
	deadAt := map[string]time.Time{} // tenant/event id[@destination] → first dead letter
	for _, d := range dead {
		id := d.tenant + "/" + d.eventID
		if d.stream != "" && d.stream != customStream {
			id += "@" + d.stream
		}
		if at, ok := deadAt[id]; !d.sent.IsZero() && (!ok || d.sent.Before(at)) {
			deadAt[id] = d.sent
		}
	}
	for id, at := range deadAt {
		event, _, _ := strings.Cut(id, "@")
		last := t.lastAt[id]
		if c.lastAt[event].After(last) && !strings.Contains(id, "@") {
			last = c.lastAt[event]
		}
		if last.After(at) {
			r.AppliedDead = append(r.AppliedDead, fmt.Sprintf("%s: dead-lettered %s, applied again %s later (%s)", id, at.Format("15:04:05.000"), last.Sub(at), reasonOf(dead, event)))
		}
	}
	sort.Strings(r.AppliedDead)
	for conv, seqs := range order {
		high := -1
		plain, _, _ := strings.Cut(conv, "@") // a destination's order is its conversation's
		for _, seq := range seqs {
			if deadSeq[plain][seq] {
				continue
			}
			if seq < high {
				r.Violations = append(r.Violations, fmt.Sprintf("%s: seq %d applied after seq %d", conv, seq, high))
			}
			high = max(high, seq)
		}
	}

	r.DeadLettered = map[string]int{}
	dlq := map[string]bool{}
	for _, d := range dead {
		// One line per reason: the worker's joins its errors with newlines.
		reason := strings.Join(strings.Fields(strings.ReplaceAll(d.reason, "\n", " ; ")), " ")
		reason = variable.ReplaceAllString(reason, "…") // one row per kind of reason
		if reason == "" {
			r.NoReason++
			reason = "(no reason: SQS redrive at maxReceiveCount)"
		}
		r.DeadLettered[reason]++
		id := d.tenant + "/" + d.eventID
		dlq[id] = true
		if ev, ok := w.all[id]; (!ok || !ev.poison) && d.tenant != outageTenant {
			r.Undeliverable = append(r.Undeliverable, fmt.Sprintf("%s: %s", id, reason))
		}
	}
	r.Poison = r.Faults[Poison]
	for id, ev := range w.all {
		ev.mu.Lock()
		accepted := ev.accepted
		ev.mu.Unlock()
		if !accepted {
			r.NotAccepted++
			continue
		}
		r.Accepted++
		switch {
		case appliedEvents[id] || dlq[id] || ev.tenant == destTenant: // computeDestinations
		case ev.tenant == outageTenant:
			r.Expired = append(r.Expired, id+": never applied nor dead-lettered")
		default:
			r.Lost = append(r.Lost, id)
		}
	}
	for _, l := range [][]string{r.Lost, r.Expired, r.Doubled, r.Violations, r.AppliedDead, r.Undeliverable} {
		sort.Strings(l)
	}
}

// variable matches the parts of a reason that differ between messages:
// times, ages, ids.
var variable = regexp.MustCompile(`\d{4}-\d\d-\d\dT[\d:]+Z|\b[\dhms.]+ ago|[0-9a-f]{8}-[0-9a-f-]{27}`)

// Failed reports whether the pack broke a promise: anything lost, doubled
// or out of order, an event never accepted, a dead letter without a reason
// or of an event the target would have accepted, or a pipeline that did
// not drain.
func (r *Report) Failed() bool {
	return len(r.Lost)+len(r.Expired)+len(r.Doubled)+len(r.Violations)+len(r.Undeliverable)+r.NoReason+r.NotAccepted+len(r.AppliedDead)+len(r.IAM.Denied)+
		len(r.Misrouted)+len(r.OverRate)+len(r.Storms)+len(r.Slow)+len(r.Stalled)+len(r.Paused) > 0 || !r.Drained
}

// Write prints the report's table, then the first few of each failure.
func (r *Report) Write(out io.Writer) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(name string, v any, note string) { fmt.Fprintf(w, "%s\t%8v\t%s\n", name, v, note) }
	row("seed", r.Seed, fmt.Sprintf("replay: SEED=%d make chaos", r.Seed))
	row("deliveries sent", r.Deliveries, fmt.Sprintf("%d HTTP requests with retries: %s", r.Requests, answers(r.Answers)))
	row("unique events", r.Unique, fmt.Sprintf("%d poison, %d over 1 MiB (through S3)", r.Poison, r.Large))
	row("accepted", r.Accepted, fmt.Sprintf("%d never accepted", r.NotAccepted))
	row("effects applied", r.Applied+r.CustomApplied, fmt.Sprintf("%d forwarded, %d re-sent after a 2xx, absorbed by Idempotency-Key; %d custom, %d run again after their instance died between effect and record", r.Applied, r.Resent, r.CustomApplied, r.CustomReruns))
	row("lost", len(r.Lost), "accepted, never applied, not in a DLQ")
	row("expired", len(r.Expired), "outage tenant: neither applied nor dead-lettered with a reason, or past its retention")
	row("doubled", len(r.Doubled), "two Idempotency-Keys, re-sent after it was recorded done, or a custom effect run again after it returned nil")
	row("order violations", len(r.Violations), "a higher sequence applied before a lower one")
	row("applied in DLQ", len(r.AppliedDead), "in the DLQ at the end, and sent to the target after its dead letter was")
	dl := 0
	for _, n := range r.DeadLettered {
		dl += n
	}
	row("dead-lettered", dl, fmt.Sprintf("%d of events the target would accept, %d without a reason", len(r.Undeliverable), r.NoReason))
	reasons := slices.Collect(maps.Keys(r.DeadLettered))
	sort.Slice(reasons, func(i, j int) bool { return r.DeadLettered[reasons[i]] > r.DeadLettered[reasons[j]] })
	for _, reason := range reasons {
		row("", r.DeadLettered[reason], reason)
	}
	row("drain time", r.DrainTime.Round(100*time.Millisecond), fmt.Sprintf("after the last delivery was answered (sending took %v)", r.SendTime.Round(100*time.Millisecond)))
	for _, k := range sortedKinds(r.Faults) {
		row("fault", r.Faults[k], string(k))
	}
	row("AWS requests", r.IAM.Calls, fmt.Sprintf("checked against template.yaml's roles (moto.iam.access_control): %d not allowed", len(r.IAM.Denied)))
	row("settings", "", fmt.Sprintf("maxReceiveCount %d, WorkerMaxAttempts %d, %d pollers a queue (template defaults); %s: maxReceiveCount %d; %s: retention %v, expiry margin %v, target down %v",
		r.MaxReceiveCount, r.MaxAttempts, r.Pollers, redriveTenant, redriveReceives, outageTenant, outageRetention, outageMargin, outagePeriod))
	row("sender", "", r.senderSettings())
	w.Flush()
	r.writeDestinations(out)
	for _, l := range []struct {
		name  string
		items []string
	}{{"lost", r.Lost}, {"expired", r.Expired}, {"doubled", r.Doubled}, {"order violations", r.Violations}, {"applied after their dead letter", r.AppliedDead}, {"dead-lettered though deliverable", r.Undeliverable}, {"at a destination whose filter excludes them", r.Misrouted}, {"over the rate", r.OverRate}, {"429 storms", r.Storms}, {"healthy destination slowed by the others", r.Slow}, {"rated destination slow after its throttle ended", r.Stalled}, {"delivered to while paused", r.Paused}, {"problems", r.Problems}, {"AWS calls template.yaml's roles do not allow", r.IAM.Denied}, {"grants no call used", r.IAM.Unused}} {
		if len(l.items) == 0 {
			continue
		}
		fmt.Fprintf(out, "\n%s (%d):\n", l.name, len(l.items))
		for i, it := range l.items {
			if i == 10 {
				fmt.Fprintf(out, "  … %d more\n", len(l.items)-10)
				break
			}
			fmt.Fprintf(out, "  %s\n", it)
		}
	}
	if r.Failed() {
		fmt.Fprintf(out, "\nFAILED (seed %d)\n", r.Seed)
	} else {
		fmt.Fprintf(out, "\nOK (seed %d)\n", r.Seed)
	}
}

// senderSettings describes the sender's gate and the backlogs it read.
func (r *Report) senderSettings() string {
	var most []string
	for _, id := range slices.Sorted(maps.Keys(r.Backlog)) {
		if id != destTenant {
			most = append(most, fmt.Sprintf("%s %d", id, r.Backlog[id]))
		}
	}
	return fmt.Sprintf("closed loop: a tenant's next event waits while its queue holds over %d visible messages (%d a poller; most read: %s); %s paced at %g events a second, not gated (most read: %d)",
		r.BacklogBound, backlogBatches*batchSize, strings.Join(most, ", "), destTenant, destSendRate, r.Backlog[destTenant])
}

func answers(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s×%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// reasonOf returns the reason of event id's first dead letter.
func reasonOf(dead []deadLetter, id string) string {
	for _, d := range dead {
		if d.tenant+"/"+d.eventID == id {
			return d.reason
		}
	}
	return ""
}

// at is "@dest", or "" for a targetUrl.
func at(dest string) string {
	if dest == "" {
		return ""
	}
	return "@" + dest
}

// computeDestinations fills the report's destinations from what their
// target saw, ds being destTenant's destinations:
//   - lost at a destination: an accepted event its filter selects, in no
//     DLQ, that it never received (an event dead-lettered may have reached
//     some of its destinations and not others: a replay delivers the rest);
//   - misrouted: an event a destination received that its filter excludes;
//   - over the rate: a second of the run in which a rated destination's
//     target received more requests (every attempt, refused ones included)
//     than its rate plus its burst — the most a token bucket of that rate
//     and burst lets through in any second;
//   - 429 storm: an episode of 429s (each within stormGap of the previous)
//     longer than stormBound.
//
// Doubled and order violations are counted in compute (per destination:
// by its Idempotency-Keys, and per conversation at it).
func (r *Report) computeDestinations(w *workload, t *target, c *customEffects, ds []tenant.Destination, dead []deadLetter) {
	dlq := map[string]bool{} // event id@stream with a dead letter
	deadAt := map[string]int{}
	deliverable := map[string]int{}
	for _, d := range dead {
		if d.tenant != destTenant {
			continue
		}
		dlq[d.eventID+"@"+d.stream] = true
		deadAt[d.stream]++
		if ev, ok := w.all[d.tenant+"/"+d.eventID]; !ok || !ev.poison {
			deliverable[d.stream]++
		}
	}
	var wantCustom []string              // tenant/event ids whose custom effects should all apply
	want := map[string]map[string]bool{} // destination → event ids it should receive
	selects := map[string]map[string]bool{}
	for _, d := range ds {
		want[d.Name], selects[d.Name] = map[string]bool{}, map[string]bool{}
	}
	for id, ev := range w.all {
		if ev.tenant != destTenant {
			continue
		}
		accepted, _ := ev.acceptance()
		for _, name := range expected(ds, ev) {
			selects[name][ev.id] = true
			if accepted && !dlq[ev.id+"@"+name] {
				want[name][ev.id] = true
			}
		}
		if accepted && !dlq[ev.id+"@"+customStream] {
			wantCustom = append(wantCustom, id)
		}
	}
	r.customRow(c, wantCustom, deadAt[customStream], deliverable[customStream])
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range ds {
		lim, _ := d.Limit()
		dr := DestinationReport{Name: d.Name, Filter: describe(d.Filter), Rate: int(lim.PerSecond), Burst: lim.Burst, Expected: len(want[d.Name])}
		st := t.dests[d.Name]
		if st == nil {
			st = &destStats{perSecond: map[int]int{}, events: map[string]bool{}}
		}
		dr.Events, dr.Requests, dr.TooMany, dr.RetryAfter, dr.Down = len(st.events), st.requests, len(st.tooMany), st.retryAfter, st.down
		dr.Dead, dr.Deliverable = deadAt[d.Name], deliverable[d.Name]
		if d.Name == down {
			p := r.phases
			for sec := int((p.quiet() + time.Second - 1) / time.Second); sec < int(p.faultUntil/time.Second); sec++ {
				dr.WhilePaused += st.perSecond[sec]
			}
			if dr.WhilePaused > 0 {
				r.Paused = append(r.Paused, fmt.Sprintf("%s: %d requests from the %vth second, %v after its pause, to its resume at %v", down, dr.WhilePaused, p.quiet().Seconds(), p.quiet()-p.pauseFrom, p.faultUntil))
			}
		}
		for id := range want[d.Name] {
			if !st.events[id] {
				dr.Lost++
				r.Lost = append(r.Lost, destTenant+"/"+id+"@"+d.Name)
			}
		}
		for id := range st.events {
			if !selects[d.Name][id] {
				dr.Misrouted++
				r.Misrouted = append(r.Misrouted, fmt.Sprintf("%s/%s at %s (%s)", destTenant, id, d.Name, dr.Filter))
			}
		}
		if len(st.perSecond) > 0 {
			dr.PerSecond = make([]int, slices.Max(slices.Collect(maps.Keys(st.perSecond)))+1)
			for s, n := range st.perSecond {
				dr.PerSecond[s] = n
				if n > dr.MaxPerSecond {
					dr.MaxPerSecond = n
				}
				if dr.Rate > 0 && n > dr.Rate+dr.Burst {
					r.OverRate = append(r.OverRate, fmt.Sprintf("%s: %d requests in second %d of the run, over %d/s + burst %d", d.Name, n, s, dr.Rate, dr.Burst))
				}
			}
		}
		dr.Episodes, dr.MaxEpisode = episodes(st.tooMany)
		if dr.MaxEpisode > stormBound() {
			r.Storms = append(r.Storms, fmt.Sprintf("%s: %d 429s in one episode, over the bound %d", d.Name, dr.MaxEpisode, stormBound()))
		}
		tag := "@" + d.Name
		for _, s := range r.Doubled {
			if strings.Contains(s, tag+" ") {
				dr.Doubled++
			}
		}
		for _, s := range r.Violations {
			if strings.Contains(s, tag+":") {
				dr.Violations++
			}
		}
		r.Destinations = append(r.Destinations, dr)
	}
	for _, l := range [][]string{r.Lost, r.Misrouted, r.OverRate} {
		sort.Strings(l)
	}
	r.computeLatency(w, t)
	r.computeRecovery(w, t, ds)
}

// recoveredAfter is how long after the squeeze ends the rated destination
// must be back to delivering at once: its factor climbs back within 30 s
// of its last pause (ratelimit.DefaultRecovery), its backlog drains at its
// rate. recoveredBound is the p99 of accept to receipt its events may take
// from then on (an injected fault's 12 s visibility timeout, twice, and
// the backlog). recoveredSample is the fewest such events judged.
const (
	recoveredAfter  = time.Minute
	recoveredBound  = time.Minute
	recoveredSample = 50
)

// computeRecovery measures the rated destination's latency, accept to
// first receipt, of the events accepted recoveredAfter after its squeeze
// ended (those an injected process fault delayed left out), and fails the
// run when its p99 exceeds recoveredBound: a destination that throttled
// must take its events again once it is well. (make chaos SEED=328943 once
// sent it nothing for 5 minutes after the squeeze: its first 429 without a
// Retry-After paused the limit MaxPenalty, the guided 429s before it
// counted as strikes.) make test's short run accepts too few that late to
// judge.
func (r *Report) computeRecovery(w *workload, t *target, ds []tenant.Destination) {
	from := r.phases.squeezeTo + recoveredAfter
	var lat []time.Duration
	for id, ev := range w.all {
		_, at := ev.acceptance()
		if ev.tenant != destTenant || at.IsZero() || at.Sub(t.start) < from || t.disturbed[id+"@"+rated] {
			continue
		}
		if !slices.Contains(expected(ds, ev), rated) {
			continue
		}
		got, ok := t.firstAt[id+"@"+rated]
		if !ok {
			continue // lost, or dead-lettered: counted as such
		}
		lat = append(lat, max(0, got.Sub(at)))
	}
	r.Recovered.set(lat)
	if r.Recovered.N >= recoveredSample && r.Recovered.P99 > recoveredBound {
		r.Stalled = append(r.Stalled, fmt.Sprintf("%s: p99 %v from accept to receipt for the events accepted %v after its squeeze ended, over %v", rated, r.Recovered.P99.Round(time.Millisecond), recoveredAfter, recoveredBound))
	}
}

// pausedRequests are down's requests while paused.
func (r *Report) pausedRequests() int {
	for _, d := range r.Destinations {
		if d.Name == down {
			return d.WhilePaused
		}
	}
	return 0
}

// customStream names destTenant's custom effects' stream in its
// dead letters and rows.
const customStream = "custom effects"

// customRow adds the row of destTenant's custom effects: lost are the
// accepted events of want whose effects did not all apply; doubled and
// order violations are compute's, of destTenant's custom effects.
func (r *Report) customRow(c *customEffects, want []string, dead, deliverable int) {
	applied, _, _, _, _ := c.outcomes()
	dr := DestinationReport{Name: customStream, Filter: "every event", Dead: dead, Deliverable: deliverable}
	for _, id := range want {
		if !applied[id] {
			dr.Lost++
			r.Lost = append(r.Lost, id+" (custom effects)")
		}
	}
	for id := range applied {
		if strings.HasPrefix(id, destTenant+"/") {
			dr.Events++
		}
	}
	dr.Expected = len(want)
	for _, s := range r.Doubled {
		if strings.HasPrefix(s, destTenant+"/") && strings.Contains(s, " effect ") {
			dr.Doubled++
		}
	}
	for _, s := range r.Violations {
		if conv, _, _ := strings.Cut(s, ":"); strings.HasPrefix(conv, destTenant+"/") && !strings.Contains(conv, "@") {
			dr.Violations++
		}
	}
	r.Destinations = append(r.Destinations, dr)
}

// Latency is a sample of delivery latencies: N deliveries (Left more left
// out, see computeLatency), their median and 99th percentile.
type Latency struct {
	N, Left  int
	P50, P99 time.Duration
}

// judged reports whether the latency bound judges this run: both phases
// hold p99Sample deliveries (make chaos's 10,000 give hundreds). Below it
// (make test's 1,000 give a few dozen) a p99 is the slowest delivery or
// two and a p50 moves by tenths of a second with whichever fault struck
// last: the figures are printed, not judged (the simulation holds the
// streams apart in make test; TestLatency the bound's arithmetic).
//
// Nor is a run in which the other tenants' sends ended before the faulty
// phase did (OthersUntil): its end would then be measured on a lighter
// machine than the fault-free phase.
func (r *Report) judged() bool {
	return r.enough() && r.OthersUntil >= r.phases.faultUntil
}

// enough reports whether both phases hold p99Sample deliveries.
func (r *Report) enough() bool {
	return r.FaultFree.N >= p99Sample && r.Faulty.N >= p99Sample
}

// p99Sample is the fewest deliveries each phase needs for the bound to
// judge their p99s.
const p99Sample = 100

// computeLatency measures the healthy destination's delivery latency —
// from the ingest's accept (the first 2xx the sender got) to the target's
// first receipt — of the events accepted in the fault-free phase (before
// r.phases.faultFrom) and in the faulty one (to r.phases.faultUntil,
// while down is down and all throttles), and fails the run when the
// faulty phase's p99 exceeds latencyBound times the fault-free one's: a
// destination unwell must not slow the others. Deliveries an injected
// process fault delayed (t.disturbed: their invocation killed or timed
// out, or their message failed in an invocation an AWS fault touched) are
// left out of both phases (counted in Left): those faults strike at
// random in either phase, and one 12 s visibility timeout decides a p99.
func (r *Report) computeLatency(w *workload, t *target) {
	var free, faulty []time.Duration
	for id, ev := range w.all {
		_, at := ev.acceptance()
		if ev.tenant != destTenant {
			if !at.IsZero() {
				r.OthersUntil = max(r.OthersUntil, at.Sub(t.start))
			}
			continue
		}
		got, ok := t.firstAt[id+"@"+healthy]
		if at.IsZero() || !ok {
			continue
		}
		phase := &free
		switch since := at.Sub(t.start); {
		case since >= r.phases.faultUntil:
			continue
		case since >= r.phases.faultFrom:
			phase = &faulty
		}
		if t.disturbed[id+"@"+healthy] {
			if phase == &free {
				r.FaultFree.Left++
			} else {
				r.Faulty.Left++
			}
			continue
		}
		*phase = append(*phase, max(0, got.Sub(at)))
	}
	r.FaultFree.set(free)
	r.Faulty.set(faulty)
	if r.judged() && float64(r.Faulty.P99) > latencyBound*float64(r.FaultFree.P99) {
		r.Slow = append(r.Slow, fmt.Sprintf("%s: p99 %v while the others were down or throttled, over %.1f× its fault-free p99 %v", healthy, r.Faulty.P99.Round(time.Millisecond), latencyBound, r.FaultFree.P99.Round(time.Millisecond)))
	}
}

// set fills l from the sample ds (nearest-rank percentiles).
func (l *Latency) set(ds []time.Duration) {
	slices.Sort(ds)
	l.N = len(ds)
	if l.N == 0 {
		return
	}
	rank := func(p float64) time.Duration { return ds[max(0, int(math.Ceil(p*float64(l.N)))-1)] }
	l.P50, l.P99 = rank(0.50), rank(0.99)
}

// describe is a filter in a few words.
func describe(f *route.Filter) string {
	if f == nil {
		return "every event"
	}
	var parts []string
	if len(f.Events) > 0 {
		parts = append(parts, strings.Join(f.Events, " "))
	}
	for _, c := range f.Where {
		switch {
		case c.In != nil:
			in := make([]string, len(c.In))
			for i, v := range c.In {
				in[i] = string(v)
			}
			parts = append(parts, fmt.Sprintf("%s in %s", c.Path, strings.Join(in, " ")))
		default:
			parts = append(parts, fmt.Sprintf("%s = %s", c.Path, c.Equals))
		}
	}
	return strings.Join(parts, ", ")
}

// writeDestinations prints destTenant's destinations: one row each with
// its checks, then the requests its target saw per second.
func (r *Report) writeDestinations(out io.Writer) {
	if len(r.Destinations) == 0 {
		return
	}
	fmt.Fprintf(out, "\ndestinations of %s (429 episodes: 429s each within %v of the previous, at most %d each)\n", destTenant, stormGap, stormBound())
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "destination\tfilter\trate\tevents\tof expected\trequests\tmax/s\t429s\twith Retry-After\tepisodes\tlongest\t503s down\tlost\tdoubled\treordered\tmisrouted\tdead letters\tof deliverable\t")
	for _, d := range r.Destinations {
		rate := "none"
		if d.Rate > 0 {
			rate = fmt.Sprintf("%d/s+%d", d.Rate, d.Burst)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", d.Name, d.Filter, rate, d.Events, d.Expected, d.Requests,
			d.MaxPerSecond, d.TooMany, d.RetryAfter, d.Episodes, d.MaxEpisode, d.Down, d.Lost, d.Doubled, d.Violations, d.Misrouted, d.Dead, d.Deliverable)
	}
	w.Flush()
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	p := r.phases
	fmt.Fprintf(out, "%s paused from %v to %v (during its outage), %d requests from %v to the resume\n", down, p.pauseFrom, p.faultUntil, r.pausedRequests(), p.quiet())
	bound := fmt.Sprintf("bound on the p99: %.1f× %s = %s", latencyBound, ms(r.FaultFree.P99), ms(time.Duration(latencyBound*float64(r.FaultFree.P99))))
	switch {
	case !r.enough():
		bound = fmt.Sprintf("not judged: fewer than %d deliveries a phase", p99Sample)
	case !r.judged():
		bound = fmt.Sprintf("not judged: the other tenants' last event was accepted at %v, before the faulty phase ended", r.OthersUntil.Round(time.Second))
	}
	fmt.Fprintf(out, "%s latency, accept to receipt: fault-free (before %v) p50 %s p99 %s over %d; faulty (%v to %v) p50 %s p99 %s over %d (%s); %d and %d delayed by an injected process fault left out\n",
		healthy, p.faultFrom, ms(r.FaultFree.P50), ms(r.FaultFree.P99), r.FaultFree.N, p.faultFrom, p.faultUntil, ms(r.Faulty.P50), ms(r.Faulty.P99), r.Faulty.N,
		bound, r.FaultFree.Left, r.Faulty.Left)
	judgedRecovery := fmt.Sprintf("bound on the p99: %v", recoveredBound)
	if r.Recovered.N < recoveredSample {
		judgedRecovery = fmt.Sprintf("not judged: fewer than %d", recoveredSample)
	}
	fmt.Fprintf(out, "%s latency after its throttle, accept to receipt (from %v): p50 %s p99 %s over %d (%s)\n",
		rated, p.squeezeTo+recoveredAfter, ms(r.Recovered.P50), ms(r.Recovered.P99), r.Recovered.N, judgedRecovery)
	top := 0
	for _, d := range r.Destinations {
		top = max(top, d.MaxPerSecond)
	}
	fmt.Fprintf(out, "requests per second (one column per %s, ▁ to █ = 1 to %d)\n", perColumn(r.Destinations), top)
	for _, d := range r.Destinations {
		if d.Name != customStream {
			fmt.Fprintf(out, "  %-8s %s\n", d.Name, sparkline(d.PerSecond, sparkWidth, top))
		}
	}
}

// sparkWidth is the most columns a per-second line takes.
const sparkWidth = 100

// perColumn says how many seconds one sparkline column shows.
func perColumn(ds []DestinationReport) string {
	n := 0
	for _, d := range ds {
		n = max(n, len(d.PerSecond))
	}
	if per := (n + sparkWidth - 1) / sparkWidth; per > 1 {
		return fmt.Sprintf("%d s, their maximum", per)
	}
	return "second"
}
