package chaos

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// target is the tenants' service behind the forward effect, as a
// well-behaved receiver: it verifies the Standard Webhooks signature,
// applies an effect on the first request carrying its Idempotency-Key and
// answers 2xx to repeats without applying them again. It misbehaves on the
// run's schedule (5xx, 429 with Retry-After, slow answers, connection
// resets before and after applying) and refuses poison events with 422.
// The outage tenant's requests all fail with 503 until outageUntil.
type target struct {
	tenants map[string]tenant.Outbound
	faults  *Faults
	poison  func(tenantID, eventID string) bool
	slow    time.Duration
	// outageUntil ends the outage tenant's outage, start is the run's
	// (set before the run).
	outageUntil, start time.Time
	// phases are destTenant's (set before the run).
	phases phases
	// bucket is destTenant's rated destination's own rate.
	bucket bucket

	mu      sync.Mutex
	byKey   map[string]*effect
	byEvent map[string]map[string]bool // tenant/event id[@destination] → idempotency keys applied
	order   map[string][]int           // tenant/conversation[@destination] → seqs in the order applied
	dests   map[string]*destStats      // destTenant's destinations by name
	// lastAt is when each tenant/event id[@destination] last reached the
	// target, re-sends included.
	lastAt map[string]time.Time
	// firstAt is when each tenant/event id@destination was first applied;
	// disturbed holds the healthy destination's whose message an injected
	// process fault delayed (set by destTenant's pollers).
	firstAt   map[string]time.Time
	disturbed map[string]bool
	applied   int
	refused   int
}

// effect is what the target knows of one Idempotency-Key.
type effect struct {
	tenant, eventID string
	seq             int
	// resent counts requests after the first 2xx; after lists those that
	// arrived after the pack had recorded the effect done.
	resent, after int
	// key is the effect's Idempotency-Key, dest its destination ("" for
	// a targetUrl).
	key, dest string
}

func newTarget(tenants map[string]tenant.Outbound, faults *Faults, poison func(string, string) bool, slow time.Duration) *target {
	return &target{
		tenants: tenants, faults: faults, poison: poison, slow: slow,
		byKey: map[string]*effect{}, byEvent: map[string]map[string]bool{}, order: map[string][]int{},
		lastAt: map[string]time.Time{}, firstAt: map[string]time.Time{}, disturbed: map[string]bool{}, dests: map[string]*destStats{},
	}
}

// body is the part of a chaos event the target reads.
type body struct {
	EventID string `json:"event_id"`
	Data    struct {
		Conversation string `json:"customer_id"`
		Seq          int    `json:"seq"`
	} `json:"data"`
}

func (t *target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tenantID, ok := strings.CutPrefix(r.URL.Path, "/tenants/")
	tenantID, ok2 := strings.CutSuffix(tenantID, "/events")
	raw, err := io.ReadAll(r.Body)
	out, known := t.tenants[tenantID]
	if !ok || !ok2 || err != nil || !known {
		http.NotFound(w, r)
		return
	}
	dest := r.Header.Get("Hookpack-Destination")
	if err := devstack.VerifyForward(r.Header, raw, secretsOf(out, dest)); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	var b body
	if key == "" || json.Unmarshal(raw, &b) != nil {
		http.Error(w, "Idempotency-Key and a chaos body are required", http.StatusBadRequest)
		return
	}
	now := time.Now()
	if tenantID == destTenant && !t.start.IsZero() {
		st := t.dest(dest)
		t.mu.Lock()
		st.requests++
		st.perSecond[int(now.Sub(t.start)/time.Second)]++
		t.mu.Unlock()
		if dest == rated && t.ratedRefusal(w, now) || dest == down && t.downRefusal(w, now) {
			return
		}
	}
	if tenantID == outageTenant && now.Before(t.outageUntil) {
		t.faults.count(TargetOutage)
		http.Error(w, "injected outage", http.StatusServiceUnavailable)
		return
	}
	if t.poison(tenantID, b.EventID) {
		t.mu.Lock()
		t.refused++
		t.mu.Unlock()
		http.Error(w, "poison event: unprocessable", http.StatusUnprocessableEntity)
		return
	}
	fault := t.faults.rates.pick(t.faults.dice.roll("target|"+key), Target5xx, Target429, TargetSlow, TargetReset, TargetLostResponse)
	if tenantID == destTenant && (dest == healthy || fault == Target429 && dest == rated) {
		// healthy is the control: no fault at all; all's 429s are its
		// bucket's and its throttle's, none at random.
		fault = ""
	}
	switch fault {
	case Target5xx:
		t.faults.count(fault)
		http.Error(w, "injected outage", http.StatusServiceUnavailable)
		return
	case Target429:
		t.faults.count(fault)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "injected rate limit", http.StatusTooManyRequests)
		return
	case TargetReset:
		t.faults.count(fault)
		reset(w)
		return
	}
	t.apply(tenantID, dest, key, b, r.Header.Get("Hookpack-Event-Id"))
	switch fault {
	case TargetLostResponse:
		t.faults.count(fault)
		reset(w)
		return
	case TargetSlow:
		t.faults.count(fault)
		sleep(r.Context(), t.slow)
	}
	w.WriteHeader(http.StatusOK)
}

// apply records the effect of key at tenantID's destination dest (""
// for a targetUrl), once.
func (t *target) apply(tenantID, dest, key string, b body, eventID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if eventID == "" {
		eventID = b.EventID
	}
	t.lastAt[tenantID+"/"+eventID+at(dest)] = time.Now()
	if e, ok := t.byKey[key]; ok {
		e.resent++
		if at, done := t.faults.completedAt(key); done && time.Now().After(at) {
			e.after++
		}
		return
	}
	t.byKey[key] = &effect{tenant: tenantID, eventID: eventID, seq: b.Data.Seq, key: key, dest: dest}
	ev, conv := tenantID+"/"+eventID, tenantID+"/"+b.Data.Conversation
	if dest != "" {
		ev, conv = ev+"@"+dest, conv+"@"+dest
		if st := t.dests[dest]; st != nil {
			st.events[eventID] = true
		}
	}
	if t.byEvent[ev] == nil {
		t.byEvent[ev] = map[string]bool{}
	}
	t.byEvent[ev][key] = true
	if _, ok := t.firstAt[ev]; !ok {
		t.firstAt[ev] = time.Now()
	}
	t.order[conv] = append(t.order[conv], b.Data.Seq)
	t.applied++
}

// disturb records that the healthy destination's messages among records
// were delayed by an injected process fault: their latency says nothing
// about the other destinations.
func (t *target) disturb(ctx context.Context, payloads *queue.Payloads, records []events.SQSMessage) {
	for _, r := range records {
		stream, err := queue.StreamOf(r.MessageAttributes)
		if err != nil || stream.Destination != healthy {
			continue
		}
		_, pointer := r.MessageAttributes[queue.SizeAttribute]
		if env, err := decode(ctx, payloads, r.Body, pointer); err == nil {
			t.mu.Lock()
			t.disturbed[env.Tenant+"/"+env.EventID+"@"+healthy] = true
			t.mu.Unlock()
		}
	}
}

// reset closes the connection without an answer.
func reset(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			if tc, ok := c.(interface{ SetLinger(int) error }); ok {
				_ = tc.SetLinger(0) // RST, not FIN
			}
			c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
