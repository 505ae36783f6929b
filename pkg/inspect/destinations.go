package inspect

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/ratelimit"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

// outboundReader reads a tenant's outbound configuration (tenant.SSM). The
// inspector keeps only names, filters and rates of it (destinations): never
// a URL or a secret.
type outboundReader interface {
	Outbound(ctx context.Context, id string) (tenant.Outbound, error)
}

// limitReader reads a rate limit's stored state (ratelimit.DynamoDB: one
// strongly consistent GetItem).
type limitReader interface {
	State(ctx context.Context, k ratelimit.Key, now time.Time) (ratelimit.State, error)
}

// pauseReader reads a tenant's destinations' pauses and failure streaks
// (destination.DynamoDB: one eventually consistent GetItem).
type pauseReader interface {
	States(ctx context.Context, tenantID string) (destination.States, error)
}

// Destination is one of the tenant's destinations as inspect shows it:
// its name, effect, filter and rate, never its URL or secrets.
type Destination struct {
	Name string `json:"name"`
	// Effect is its ledger effect (worker.DestinationEffect).
	Effect string `json:"effect"`
	// Events are its filter's "<sender>:<type>" patterns (none: every
	// event), Conditions the count of its body conditions.
	Events     []string `json:"events,omitempty"`
	Conditions int      `json:"conditions,omitempty"`
	// Rate is as configured ("20/s"; empty: no limit), PerSecond and Burst
	// as the limiter takes them.
	Rate      string  `json:"rate,omitempty"`
	PerSecond float64 `json:"perSecond,omitempty"`
	Burst     int     `json:"burst,omitempty"`
	// Horizon is its retry horizon (tenant.Destination.RetryHorizon): how
	// long an event may wait or fail there before it is dead-lettered.
	Horizon time.Duration `json:"horizon,omitempty"`
	// Meaning, in a journey, says why the event has no record of this
	// destination's effect (empty when it has one).
	Meaning string `json:"meaning,omitempty"`
	// State, in a journey, is the event's own state at this destination
	// (its effect's; dead while a dead letter of its stream is in the DLQ;
	// empty without a record), Why what it rests on, and DeadLetter the
	// newest listed dead letter of the event that is this destination's
	// (its stream names it, or it has no stream: every destination's).
	State      EffectState  `json:"state,omitempty"`
	Why        string       `json:"why,omitempty"`
	DeadLetter *replay.Item `json:"deadLetter,omitempty"`
}

// destinations returns the tenant's destinations (none for a legacy
// targetUrl), or a note saying why they could not be read: inspect still
// answers from the other stores. Only names, filters and rates are kept.
func (in *Inspector) destinations(ctx context.Context, tenantID string) ([]Destination, string) {
	if in.cfg.Outbound == nil {
		return nil, ""
	}
	out, err := in.cfg.Outbound.Outbound(ctx, tenantID)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		return nil, "the tenant has no outbound configuration: its events cannot be forwarded (the worker dead-letters them)"
	case errors.Is(err, tenant.ErrInvalid):
		// The error names fields, never values: still, say only what it is.
		return nil, "the tenant's outbound configuration is not valid: its destinations are not shown (scripts/tenant/check names the problems)"
	case err != nil:
		return nil, "the tenant's destinations could not be read (their names, filters and rates, from its outbound configuration): " + err.Error()
	}
	var ds []Destination
	for _, d := range out.Destinations {
		v := Destination{Name: d.Name, Effect: worker.DestinationEffect(d.Name), Rate: d.Rate}
		if d.Filter != nil {
			v.Events, v.Conditions = d.Filter.Events, len(d.Filter.Where)
		}
		if l, err := d.Limit(); err == nil {
			v.PerSecond, v.Burst = l.PerSecond, l.Burst
		}
		if h, err := d.RetryHorizon(); err == nil {
			v.Horizon = h
		}
		ds = append(ds, v)
	}
	return ds, ""
}

// filterText says what d's filter selects.
func (d Destination) filterText() string {
	s := "every event"
	if len(d.Events) > 0 {
		s = fmt.Sprintf("%q", d.Events)
	}
	if d.Conditions > 0 {
		s += fmt.Sprintf(" where %d condition(s) hold", d.Conditions)
	}
	return s
}

// rateText is d's rate and burst.
func (d Destination) rateText() string {
	if d.Rate == "" {
		return "no rate (as fast as the worker's concurrency allows)"
	}
	return fmt.Sprintf("%s, burst %d", d.Rate, d.Burst)
}

// Limiter is a destination's rate limiter as its stored state shows it
// (ratelimit.State); Idle when it has none: unused for the last hour, so
// its next slot is now and a burst is available.
type Limiter struct {
	Idle bool `json:"idle,omitempty"`
	// NextSlot is the theoretical arrival time: the end of the schedule of
	// every slot granted so far.
	NextSlot time.Time `json:"nextSlot,omitzero"`
	// PausedUntil is the end of the last 429's pause, when it is later
	// than now.
	PausedUntil time.Time `json:"pausedUntil,omitzero"`
	// Factor is the fraction of the rate in force (429s halve it, time
	// without one raises it back to 1 within 30 s).
	Factor float64 `json:"factor,omitempty"`
	// Strikes counts the 429s without a Retry-After in a row (since the
	// factor was last whole or a 429 said when): each doubles the pause.
	Strikes int `json:"strikes,omitempty"`
}

// DestinationSummary is a destination's pace in a tenant's summary.
type DestinationSummary struct {
	Destination
	// Limiter is nil for a destination without a rate.
	Limiter *Limiter `json:"limiter,omitempty"`
	// Deliveries counts its events by state (SummaryOptions.Scan: nil
	// without a scan of the ledger).
	Deliveries *Deliveries `json:"deliveries,omitempty"`
	// FailingConversations are its conversations whose head event it
	// keeps failing (a scan: Deliveries.Retrying of them), HeldUntil the
	// latest time the last of them is dead-lettered. While they fail,
	// DrainedBy is the earliest (nothing waits behind them), and
	// DrainedLatest when the backlog is drained at the latest: everything
	// queued may wait behind them until HeldUntil, then go at the rate
	// (nil when DrainedBy is, or a failing event cannot be dated).
	FailingConversations []FailingConversation `json:"failingConversations,omitempty"`
	HeldUntil            *time.Time            `json:"heldUntil,omitempty"`
	DrainedLatest        *time.Time            `json:"drainedLatest,omitempty"`
	// DeadLetters counts the DLQ listing's dead letters of its stream.
	DeadLetters int `json:"deadLetters"`
	// Backlog is what the tenant's queue holds (visible, in flight and
	// delayed): at worst, every one of them is for this destination.
	Backlog int `json:"backlog"`
	// DrainedBy is when the backlog is delivered at the rate, if every
	// queued message is selected by this destination and its target
	// answers no 429: from the later of now, the next slot and the pause's
	// end, Backlog ÷ the rate. Nil without a rate or without a backlog, or
	// while the destination is paused.
	DrainedBy *time.Time `json:"drainedBy,omitempty"`
	// Paused is set while an operator or auto-pause holds the destination
	// (its events wait until it is resumed); Failing while its deliveries
	// fail without a success (auto-pause counts from Failing.Since).
	Paused  *destination.Pause   `json:"paused,omitempty"`
	Failing *destination.Failing `json:"failing,omitempty"`
}

// withState adds the destination's pause and failure streak to s; a
// paused destination drains nothing.
func (s DestinationSummary) withState(st destination.State) DestinationSummary {
	if st.IsPaused() {
		p := st.Paused
		s.Paused, s.DrainedBy, s.DrainedLatest = &p, nil, nil
	}
	if st.IsFailing() {
		f := st.Failing
		s.Failing = &f
	}
	return s
}

// pace returns d's summary with the tenant's backlog: its limiter's state
// (one GetItem) and when the backlog drains at its rate.
func (in *Inspector) pace(ctx context.Context, tenantID string, d Destination, backlog int, now time.Time) (DestinationSummary, error) {
	s := DestinationSummary{Destination: d, Backlog: backlog}
	if d.PerSecond <= 0 {
		return s, nil
	}
	lim := &Limiter{Idle: true, Factor: 1}
	if in.cfg.Limits != nil {
		st, err := in.cfg.Limits.State(ctx, ratelimit.Key{Tenant: tenantID, Name: "dest:" + d.Name}, now)
		switch {
		case errors.Is(err, ratelimit.ErrNotFound):
		case err != nil:
			return s, fmt.Errorf("rate limiter of destination %s: %w", d.Name, err)
		default:
			lim = &Limiter{NextSlot: st.Next, Factor: st.Factor, Strikes: st.Strikes}
			if st.Penalty.After(now) {
				lim.PausedUntil = st.Penalty
			}
		}
	}
	s.Limiter = lim
	if backlog > 0 {
		start := now
		if lim.NextSlot.After(start) {
			start = lim.NextSlot
		}
		if lim.PausedUntil.After(start) {
			start = lim.PausedUntil
		}
		at := start.Add(time.Duration(float64(backlog) / d.PerSecond * float64(time.Second))).Truncate(time.Second)
		s.DrainedBy = &at
	}
	return s, nil
}

// pacedRE finds the destination a paced run waited for in its error: the
// forward names it ("destination billing: waiting for the rate limit: …"),
// and the limit's name carries it too ("limit dest:billing").
var pacedRE = regexp.MustCompile(`destination ([a-z0-9][a-z0-9-]*): |limit dest:([a-z0-9][a-z0-9-]*)`)

// pacedFor returns the destinations a paced run's error names, in order:
// a message waits for a rate only when every destination that did not
// take it waits for one (worker's worst outcome).
func pacedFor(err string) []string {
	var out []string
	for _, m := range pacedRE.FindAllStringSubmatch(err, -1) {
		if name := m[1] + m[2]; !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}
