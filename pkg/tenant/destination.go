package tenant

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/route"
)

// Destination is one endpoint of a tenant's events: the events its Filter
// selects are POSTed to URL, signed with Secrets, within Timeout, no faster
// than Rate.
type Destination struct {
	// Name identifies the destination in the ledger (as a suffix of the
	// forward effect's name) and in logs: 1 to MaxNameLength characters
	// of a-z, 0-9 and '-', not starting with '-', unique in the tenant.
	// It is empty only for the destination of a legacy targetUrl.
	Name    string   `json:"name"`
	URL     string   `json:"url"`
	Secrets []string `json:"secrets"`
	// Timeout is a Go duration for each attempt ("10s" default).
	Timeout string `json:"timeout,omitempty"`
	// Filter selects the events; nil selects every event.
	Filter *route.Filter `json:"filter,omitempty"`
	// Rate is the most events per second, minute or hour delivered to URL
	// ("20/s", "600/m", "1000/h"); empty: no limit.
	Rate string `json:"rate,omitempty"`
	// Burst is how many events may go at once above the rate after a
	// quiet spell (0: the default, the rate per second rounded down, at
	// least 1). It needs a Rate.
	Burst int `json:"burst,omitempty"`
	// Horizon is how long an event may wait or fail at this destination
	// before it is dead-lettered with the reason, from when it was queued:
	// a Go duration from MinHorizon to MaxHorizon (DefaultHorizon when
	// empty).
	Horizon string `json:"horizon,omitempty"`
}

// Retry horizons of a destination. MaxHorizon is the tenant queues'
// retention (14 days) less the worker's expiry margin (2 days,
// template.yaml's QUEUE_RETENTION and EXPIRY_MARGIN): a message must be
// dead-lettered with its reason before SQS would delete it.
const (
	DefaultHorizon = 72 * time.Hour
	MinHorizon     = time.Minute
	MaxHorizon     = 12 * 24 * time.Hour
)

// RetryHorizon returns the destination's horizon (DefaultHorizon when
// unset), or an error when Horizon is not a duration from MinHorizon to
// MaxHorizon.
func (d Destination) RetryHorizon() (time.Duration, error) {
	if d.Horizon == "" {
		return DefaultHorizon, nil
	}
	h, err := time.ParseDuration(d.Horizon)
	if err != nil || h < MinHorizon || h > MaxHorizon {
		return 0, fmt.Errorf("not a duration from %s to %s (the queue's retention less the expiry margin)", MinHorizon, MaxHorizon)
	}
	return h, nil
}

// Limits of a destination.
const (
	MaxNameLength = 32
	// MaxRate is the highest rate, in events per second.
	MaxRate  = 1000
	MaxBurst = 1000
)

// Limit is a destination's rate as a token bucket takes it.
type Limit struct {
	// PerSecond is the sustained rate in events per second; 0 means no
	// limit.
	PerSecond float64
	// Burst is the bucket's size.
	Burst int
}

// Limit returns the destination's rate and burst: the zero Limit when it
// has no rate, and an error wrapping ErrInvalid when Rate or Burst is not
// valid (a configuration that passed Outbound.Validate has none).
func (d Destination) Limit() (Limit, error) {
	if d.Rate == "" {
		if d.Burst != 0 {
			return Limit{}, fmt.Errorf("%w: burst without a rate", ErrInvalid)
		}
		return Limit{}, nil
	}
	per, err := ParseRate(d.Rate)
	if err != nil {
		return Limit{}, err
	}
	burst := d.Burst
	switch {
	case burst == 0:
		burst = max(1, int(math.Floor(per)))
	case burst < 0 || burst > MaxBurst:
		return Limit{}, fmt.Errorf("%w: burst must be 1 to %d", ErrInvalid, MaxBurst)
	}
	return Limit{PerSecond: per, Burst: burst}, nil
}

// ParseRate returns the events per second of a rate "<n>/s", "<n>/m" or
// "<n>/h", n a positive whole number, or an error wrapping ErrInvalid when
// it is malformed or above MaxRate per second.
func ParseRate(s string) (float64, error) {
	per, err := parseRate(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return per, nil
}

func parseRate(s string) (float64, error) {
	n, unit, ok := strings.Cut(s, "/")
	seconds := map[string]float64{"s": 1, "m": 60, "h": 3600}[unit]
	count, err := strconv.ParseUint(n, 10, 32)
	if !ok || seconds == 0 || err != nil || count == 0 {
		return 0, errors.New(`not "<n>/s", "<n>/m" or "<n>/h" with n a positive whole number`)
	}
	per := float64(count) / seconds
	if per > MaxRate {
		return 0, fmt.Errorf("over %d per second", MaxRate)
	}
	return per, nil
}

// Targets returns the tenant's destinations in configuration order: the
// Destinations, or, for a legacy TargetURL, one destination without a
// name or filter receiving every event.
func (o Outbound) Targets() []Destination {
	if o.TargetURL != "" {
		return []Destination{{URL: o.TargetURL, Secrets: o.Secrets, Timeout: o.Timeout}}
	}
	return o.Destinations
}

// Match returns the destinations that select ev, in configuration order
// (none is a normal outcome, not an error). It is pure: the same event and
// configuration give the same destinations on every delivery. The body is
// decoded at most once, and only when a filter has conditions.
func (o Outbound) Match(ev *route.Event) []Destination {
	var out []Destination
	for _, d := range o.Targets() {
		if d.Filter.Match(ev) {
			out = append(out, d)
		}
	}
	return out
}
