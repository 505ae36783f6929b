package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/worker"
)

// customType is the event type of the custom tenants' events: the worker's
// registry sends it to customEffects.handle, every other type to the
// forward effect.
const customType = "chaos.custom"

// errPoison is a custom event's permanent failure (its dead letter's reason).
var errPoison = errors.New("poison event: the effect can never apply it")

// customEffects is a worker.Registry handler whose effects are ev.Once
// calls counted in this process, as a downstream that deduplicates by the
// idempotency key would apply them: each event runs the effect "record"
// and, for odd sequence numbers, "notify". A run of an effect after an
// earlier run of it returned nil is doubled, whatever was acked: Once
// promises that a completed effect never runs again. The one exception is
// counted apart (rerun): every run that returned nil was interrupted before
// the ledger stored its completion — its instance died, or it returned
// after its context had ended (a hung effect the worker had given up on,
// whose lease another attempt may have taken over) — the window between an
// effect and its record that no ledger closes, which the idempotency key is
// for.
//
// Its faults: an effect that hangs past the function timeout without
// looking at its context (then applies and returns nil), and, for the
// events the run chose, an instance that dies inside the effect once it
// applied, on every delivery of the event's first message, until SQS moves
// it to the DLQ (the run then redrives it).
type customEffects struct {
	faults *Faults
	poison func(tenantID, eventID string) bool
	// chained reports whether the event's effects crash until SQS
	// dead-letters it; hang is how long a hung effect blocks.
	chained func(tenantID, eventID string) bool
	hang    time.Duration

	mu      sync.Mutex
	byKey   map[string]*customRun // idempotency key → its runs
	byEvent map[string]int        // tenant/event id → effects applied
	want    map[string]int        // tenant/event id → effects it has
	order   map[string][]int      // tenant/conversation → seqs in the order applied
	// lastAt is when a run of an effect of each tenant/event id last started.
	lastAt  map[string]time.Time
	applied int
}

// customRun is what the downstream knows of one effect.
type customRun struct {
	tenant, eventID, name string
	runs                  int
	done                  bool // a run returned nil
	doubled               int  // runs that started after that
	rerun                 int  // of them, after every such run's instance died unrecorded
	applied               bool
	// doneBy are the invocations of the runs that returned nil, and late
	// whether each returned after its context had ended.
	doneBy []*invocation
	late   []bool
	// history lists the runs: message id, receive count, how it ended.
	history []string
}

func newCustomEffects(f *Faults, poison, chained func(string, string) bool, hang time.Duration) *customEffects {
	return &customEffects{
		faults: f, poison: poison, chained: chained, hang: hang,
		byKey: map[string]*customRun{}, byEvent: map[string]int{}, want: map[string]int{}, order: map[string][]int{},
		lastAt: map[string]time.Time{},
	}
}

// effectNames are the effects of an event with sequence seq.
func effectNames(seq int) []string {
	if seq%2 == 1 {
		return []string{"record", "notify"}
	}
	return []string{"record"}
}

// handle is the worker.HandlerFunc of custom events.
func (c *customEffects) handle(ctx context.Context, ev *worker.Event) error {
	var b body
	raw, err := ev.RawBody()
	if err != nil {
		return worker.Permanent(err)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return worker.Permanent(err)
	}
	if c.poison(ev.Tenant, ev.EventID) {
		return worker.Permanent(errPoison)
	}
	names := effectNames(b.Data.Seq)
	c.mu.Lock()
	c.want[ev.Tenant+"/"+ev.EventID] = len(names)
	c.mu.Unlock()
	original := c.faults.original(ev.Key, ev.MessageID)
	for _, name := range names {
		err := ev.Once(ctx, name, func(ctx context.Context, key string) error {
			return c.run(ctx, ev, b, name, key, original)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// run is one run of effect name: it applies the effect at most once per
// key, as a deduplicating downstream would, and counts a run that starts
// after an earlier one returned nil.
func (c *customEffects) run(ctx context.Context, ev *worker.Event, b body, name, key string, original bool) error {
	c.mu.Lock()
	r := c.byKey[key]
	if r == nil {
		r = &customRun{tenant: ev.Tenant, eventID: ev.EventID, name: name}
		c.byKey[key] = r
	}
	if r.done {
		if _, recorded := c.faults.completedAt(key); !recorded && interrupted(r.doneBy, r.late) {
			r.rerun++
		} else {
			r.doubled++
		}
	}
	r.runs++
	c.lastAt[ev.Tenant+"/"+ev.EventID] = time.Now()
	first := r.runs == 1
	run := len(r.history)
	r.history = append(r.history, fmt.Sprintf("%s (receive %d, started %s)", ev.MessageID, ev.Attempt, time.Now().Format("15:04:05.000")))
	c.mu.Unlock()
	ended := func(how string) {
		c.mu.Lock()
		r.history[run] += " " + how + " " + time.Now().Format("15:04:05.000")
		c.mu.Unlock()
	}

	if first && c.faults.dice.roll("hang|"+key) < c.faults.rates[EffectHangs] {
		// A call that takes no context (net/smtp, a stuck SDK) and outlives
		// the invocation: the worker cuts the batch off and the effect runs
		// on, then applies and returns nil with nobody left to record it.
		c.faults.count(EffectHangs)
		time.Sleep(c.hang)
	}
	c.apply(r, ev, b)
	if original && c.chained(ev.Tenant, ev.EventID) {
		// The instance dies inside the effect, after it applied: nothing is
		// recorded, nothing deleted; the message comes back until SQS moves
		// it to the DLQ.
		if inv := invocationOf(ctx); inv != nil {
			inv.kill()
		}
		ended("crashed")
		return errDied
	}
	c.mu.Lock()
	r.done = true
	r.doneBy = append(r.doneBy, invocationOf(ctx))
	r.late = append(r.late, ctx.Err() != nil)
	c.mu.Unlock()
	ended("returned nil")
	return nil
}

// interrupted reports whether every run that returned nil was cut off
// before it could be recorded: its invocation died, or it returned late.
func interrupted(invs []*invocation, late []bool) bool {
	for i, inv := range invs {
		if !late[i] && (inv == nil || !inv.dead.Load()) {
			return false
		}
	}
	return len(invs) > 0
}

// apply records the effect's application, once per key.
func (c *customEffects) apply(r *customRun, ev *worker.Event, b body) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.applied {
		return
	}
	r.applied = true
	c.applied++
	id := ev.Tenant + "/" + ev.EventID
	c.byEvent[id]++
	if r.name == "record" {
		conv := ev.Tenant + "/" + b.Data.Conversation
		c.order[conv] = append(c.order[conv], b.Data.Seq)
	}
}

// outcomes returns, under the lock, the events with every effect applied,
// the doubled effects, the re-runs after a crash, the applied order per
// conversation and the number of effects applied.
func (c *customEffects) outcomes() (applied map[string]bool, doubled []string, reruns int, order map[string][]int, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	applied = map[string]bool{}
	for id, k := range c.byEvent {
		if k >= c.want[id] {
			applied[id] = true
		}
	}
	for _, r := range c.byKey {
		reruns += r.rerun
		if r.doubled > 0 {
			doubled = append(doubled, fmt.Sprintf("%s/%s effect %s ran %d more time(s) after a run returned nil; runs: %s", r.tenant, r.eventID, r.name, r.doubled, strings.Join(r.history, "; ")))
		}
	}
	order = map[string][]int{}
	for conv, seqs := range c.order {
		order[conv] = slices.Clone(seqs)
	}
	return applied, doubled, reruns, order, c.applied
}
