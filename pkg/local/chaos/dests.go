package chaos

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

// destTenant's events go to three destinations over the same
// conversations, each its own stream, and to a custom effect (its
// customEffects on the effects stream):
//   - healthy takes every event and its target never misbehaves: the
//     control whose latency must not move while the others are unwell;
//   - down takes the invoice events, through a filter whose two halves
//     each refuse a type the other admits (downFilter): its events (sender
//     and type) admit the invoices and ticket.opened, its where condition
//     (the body's event_type) the invoices and ticket.closed. Its target
//     answers 503 to every request of the faulty phase, an outage
//     shorter than its retry schedule: a backlog builds, then drains,
//     without a dead letter;
//   - all (rated) takes every event at most destRate a second (burst
//     destBurst); its target enforces that rate itself (a token bucket
//     answering 429 above it, every other refusal with Retry-After),
//     throttles in the faulty phase (an eighth of its rate, every 429
//     with Retry-After), then takes half its rate during the squeeze.
//
// An operator pauses down from 5 s into the faulty phase to its end
// (pkg/destination, as `make pause` does): its messages wait, no attempt;
// on resume its backlog drains in order.
//
// Before the faulty phase every destination is well: the fault-free phase
// whose healthy latency the faulty phase is measured against (phases).
const (
	destTenant = "zeta"
	// destRate and destBurst are all's rate ("20/s") and burst.
	destRate  = 20
	destBurst = 5
	// destSendRate paces destTenant's events: all its conversations
	// together send at most that many events a second (each conversation
	// spreads its events over phases.sendSpan at least), the same offered
	// load in both phases, whatever the other tenants' backlog — its
	// sender is not gated (see gate). About 9
	// messages a second in its queue (each event one per destination that
	// takes it and one for its custom effect): at 2 events a second its
	// queue's visible backlog stayed under 60 messages; at 5 it grew from
	// 16 to over 700 in 4 minutes (make chaos, 2 cores shared with other
	// work), every latency with it.
	destSendRate = 2.5
	// destHorizon is every destination's retry horizon: a message waiting
	// longer than its first ten receives waits at least the time left to
	// its horizon over the receives it has left (72 h by default: half an
	// hour a wait, past any drain timeout; 15 min: about 6 s); the outage
	// and the throttle are far shorter.
	destHorizon = 15 * time.Minute
	// throttleFactor divides all's rate while it throttles.
	throttleFactor = 8
	// rated is the destination with the rate, healthy the control, down
	// the one with the outage.
	rated   = "all"
	healthy = "healthy"
	down    = "down"
	// latencyBound is how much the healthy destination's faulty-phase p99
	// may exceed its fault-free p99 (×1.5).
	latencyBound = 1.5
)

// destTypes are destTenant's event types, in turn by sequence number; each
// has a custom effect as well (types no other tenant sends).
var destTypes = []string{"invoice.paid", "ticket.opened", "invoice.created", "ticket.closed"}

// destinations returns destTenant's destinations at url, each with its
// name in the query (the target tells them apart by the
// Hookpack-Destination header). paced false
// leaves all without its rate (the target still enforces it): the run
// that shows the report catching a pack that does not pace.
func destinations(url string, secrets []string, paced bool) []tenant.Destination {
	ds := []tenant.Destination{
		{Name: healthy},
		{Name: down, Filter: downFilter()},
		{Name: rated, Rate: fmt.Sprintf("%d/s", destRate), Burst: destBurst},
	}
	for i := range ds {
		ds[i].URL, ds[i].Secrets = url+"?to="+ds[i].Name, secrets
		ds[i].Timeout, ds[i].Horizon = effectTimeout.String(), destHorizon.String()
	}
	if !paced {
		ds[2].Rate, ds[2].Burst = "", 0
	}
	return ds
}

// downFilter is down's filter: the invoice events, as an events list and
// a where condition that each admit one ticket type more, so that a worker
// that ignored either sends down tickets (misrouted) and one that read
// either too narrowly leaves out invoices (lost), while down's load stays
// the invoices'.
func downFilter() *route.Filter {
	return &route.Filter{
		Events: []string{providerName + ":invoice.*", providerName + ":ticket.opened"},
		Where:  []route.Condition{{Path: "event_type", In: []route.Value{route.Value(`"invoice.paid"`), route.Value(`"invoice.created"`), route.Value(`"ticket.closed"`)}}},
	}
}

// expected returns the names of the destinations of ds that should
// receive ev by the harness's own reading of their filters (wants), not
// by package route's, which the worker uses: a filter the worker misreads
// then shows as lost or misrouted events.
func expected(ds []tenant.Destination, ev *event) []string {
	var out []string
	for _, d := range ds {
		if wants(d.Name, ev) {
			out = append(out, d.Name)
		}
	}
	return out
}

// wants reports whether destination dest of destTenant should receive ev:
// down the invoices, the others every event.
func wants(dest string, ev *event) bool {
	return dest != down || strings.HasPrefix(ev.typ, "invoice.")
}

// bucket is all's target's own token bucket: rate tokens a second, burst
// at most; a request without a token is refused with 429.
type bucket struct {
	mu     sync.Mutex
	tokens float64
	at     time.Time
}

// take reports whether a request at now gets a token at rate per second,
// and else how long until one.
func (b *bucket) take(now time.Time, rate float64, burst int) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.at.IsZero() {
		b.tokens = float64(burst)
	} else {
		b.tokens = math.Min(float64(burst), b.tokens+now.Sub(b.at).Seconds()*rate)
	}
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// destStats is what one destination's target saw.
type destStats struct {
	// perSecond counts the requests that arrived in each second of the run.
	perSecond map[int]int
	requests  int
	// tooMany are the times of the 429s answered; retryAfter counts those
	// with a Retry-After.
	tooMany    []time.Time
	retryAfter int
	down       int // 503s answered while down
	events     map[string]bool
}

// phases are destTenant's phases, from the start of the run: fault-free
// before faultFrom; faulty (down down and, from pauseFrom, paused; all
// throttled) from faultFrom to faultUntil; all squeezed (half its rate)
// from faultUntil to squeezeTo. sendSpan is the least time each of its
// conversations spreads its events over, so that both phases hold some
// at any number of deliveries.
type phases struct {
	faultFrom, pauseFrom, faultUntil, squeezeTo, sendSpan time.Duration
}

// newPhases returns phases whose fault-free phase lasts length and whose
// faulty phase 5 s more (down is paused in the last length of it).
// make chaos's (DefaultPhase) hold 190–230 of healthy's deliveries each
// at destSendRate, over p99Sample once those an injected fault delayed
// are left out (about a third), and end before the other tenants' sends do
// (about 3 minutes in, on 2 shared cores; see Report.judged); make
// test's short run (25 s) holds a few dozen.
func newPhases(length time.Duration) phases {
	return phases{
		faultFrom: length, pauseFrom: length + 5*time.Second, faultUntil: 2*length + 5*time.Second,
		squeezeTo: 2*length + 25*time.Second, sendSpan: 2*length + 10*time.Second,
	}
}

// DefaultPhase is the length of make chaos's fault-free phase (Options.Phase).
const DefaultPhase = 90 * time.Second

// quiet is when, after pauseFrom, down's target must hear nothing more
// until its resume: the workers' destination caches have read the pause
// (destination.DefaultCacheTTL) and an invocation that read it before has
// ended (workerTimeout), plus a second.
func (p phases) quiet() time.Duration {
	return p.pauseFrom + destination.DefaultCacheTTL + workerTimeout + time.Second
}

// faulty reports whether since (from the start of the run) is in the
// faulty phase.
func (p phases) faulty(since time.Duration) bool {
	return since >= p.faultFrom && since < p.faultUntil
}

// faulty reports whether now is in the faulty phase of down's and all's
// targets.
func (t *target) faulty(now time.Time) bool {
	return t.phases.faulty(now.Sub(t.start))
}

// downRefusal answers a request to destTenant's down destination with 503
// during its outage, and reports whether it did.
func (t *target) downRefusal(w http.ResponseWriter, now time.Time) bool {
	if !t.faulty(now) {
		return false
	}
	st := t.dest(down)
	t.mu.Lock()
	st.down++
	t.mu.Unlock()
	http.Error(w, "injected outage", http.StatusServiceUnavailable)
	return true
}

// ratedRefusal answers a request to destTenant's rated destination from
// its phase and bucket, and reports whether it did.
func (t *target) ratedRefusal(w http.ResponseWriter, now time.Time) bool {
	since := now.Sub(t.start)
	st := t.dest(rated)
	rate, throttling := float64(destRate), t.faulty(now)
	switch {
	case throttling:
		rate /= throttleFactor
	case since >= t.phases.faultUntil && since < t.phases.squeezeTo:
		rate /= 2
	}
	ok, wait := t.bucket.take(now, rate, destBurst)
	if ok {
		return false
	}
	t.mu.Lock()
	st.tooMany = append(st.tooMany, now)
	// While throttling every 429 says when to come back, else every other.
	with := throttling || len(st.tooMany)%2 == 0
	if with {
		st.retryAfter++
	}
	t.mu.Unlock()
	if with {
		w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(wait.Seconds()))))
	}
	http.Error(w, "over the rate", http.StatusTooManyRequests)
	return true
}

// pause pauses down at start+p.pauseFrom and resumes it at
// start+p.faultUntil, as an operator would; a failed call is a problem
// of the run.
func pause(ctx context.Context, states *destination.DynamoDB, start time.Time, p phases, problem func(string)) {
	sleep(ctx, time.Until(start.Add(p.pauseFrom)))
	if _, err := states.Pause(ctx, destTenant, down, "chaos: down for maintenance", time.Now()); err != nil {
		problem(err.Error())
		return
	}
	sleep(ctx, time.Until(start.Add(p.faultUntil)))
	if _, err := states.Resume(context.WithoutCancel(ctx), destTenant, down); err != nil {
		problem(err.Error())
	}
}

// dest returns name's stats (t.mu not held).
func (t *target) dest(name string) *destStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.dests[name]
	if st == nil {
		st = &destStats{perSecond: map[int]int{}, events: map[string]bool{}}
		t.dests[name] = st
	}
	return st
}

// secretsOf returns the secrets a forward to tenant id's destination name
// is signed with.
func secretsOf(out tenant.Outbound, name string) []string {
	for _, d := range out.Targets() {
		if d.Name == name {
			return d.Secrets
		}
	}
	return nil
}

// DestinationReport is what one of destTenant's destinations saw, and its
// checks.
type DestinationReport struct {
	Name, Filter string
	// Rate and Burst are its limit (0: none).
	Rate, Burst int
	// Expected counts the accepted events its filter selects; Events the
	// distinct events it received.
	Expected, Events, Requests int
	// PerSecond are the requests it received in each second of the run;
	// MaxPerSecond their maximum.
	PerSecond    []int
	MaxPerSecond int
	// TooMany are the 429s its target answered (RetryAfter of them with a
	// Retry-After), in Episodes runs (see stormGap); MaxEpisode is the
	// longest run.
	TooMany, RetryAfter, Episodes, MaxEpisode int
	Down                                      int // 503s while its target was down
	Lost, Doubled, Violations, Misrouted      int
	// Dead counts its dead letters, Deliverable those of events its
	// target would have accepted (not poison: each fails the run).
	Dead, Deliverable int
	// WhilePaused counts the requests down's target received between
	// phases.quiet and its resume (each fails the run).
	WhilePaused int
}

// stormGap separates 429 episodes: a 429 within it of the previous one
// belongs to the same episode. It is the shortest pause a 429 starts
// (ratelimit Slow: 1 s, or the Retry-After, whole seconds).
const stormGap = time.Second

// stormBound is the most 429s one episode may hold: the slots the limiter
// may have granted before the pause began, which it does not take back —
// the burst plus the rate over the horizon of a reservation (worker.MaxSlotWait,
// within the invocation's working time less the effect's budget:
// workerTimeout − workerMargin − effectTimeout, 2.5 s) — and nothing more:
// every request after the pause's start waits for it.
func stormBound() int {
	horizon := min(worker.MaxSlotWait, workerTimeout-workerMargin-effectTimeout)
	return destBurst + int(math.Ceil(destRate*horizon.Seconds()))
}

// episodes splits 429 times (in order) into runs separated by stormGap,
// and returns how many and the longest.
func episodes(at []time.Time) (n, longest int) {
	run := 0
	for i, x := range at {
		if i == 0 || x.Sub(at[i-1]) >= stormGap {
			n++
			run = 0
		}
		run++
		longest = max(longest, run)
	}
	return n, longest
}

// sparkline draws counts in at most width columns (the maximum of each
// column's seconds), scaled to max.
func sparkline(counts []int, width, top int) string {
	if len(counts) == 0 || top == 0 {
		return ""
	}
	per := (len(counts) + width - 1) / width
	bars := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	for i := 0; i < len(counts); i += per {
		m := 0
		for _, c := range counts[i:min(i+per, len(counts))] {
			m = max(m, c)
		}
		if m == 0 {
			b.WriteRune(' ')
			continue
		}
		b.WriteRune(bars[min(len(bars)-1, (m*len(bars)-1)/top)])
	}
	return b.String()
}
