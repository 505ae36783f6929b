package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hookpack/hookpack/pkg/internal/epoch"
	"github.com/hookpack/hookpack/pkg/tenantid"
)

// Sentinel errors.
var (
	// ErrInvalidKey: a tenant or limit name fails validation.
	ErrInvalidKey = errors.New("invalid rate limit key")
	// ErrContention: the limit's item changed under every one of
	// maxAttempts conditional writes (many invocations reserving or slowing
	// it at the same instant). Nothing was reserved; hold the messages back
	// and try again, as after a full horizon.
	ErrContention = errors.New("rate limit contended")
	// ErrNotFound: the limit has no stored state (never used, or idle past
	// its retention).
	ErrNotFound = errors.New("rate limit not found")
)

// Key names one limit of one tenant: a destination (by convention
// "dest:<host>") or a limit a custom effect takes from by name.
type Key struct {
	Tenant string
	// Name is 1–255 characters of A-Z a-z 0-9 . _ : -; never a URL, whose
	// path or query may hold a secret that errors would then carry.
	Name string
}

func (k Key) String() string { return k.Tenant + "/" + k.Name }

// pk is the item's partition key in the ledger table; tenant ids and
// names cannot contain '#', so distinct keys never share an item, and no
// ledger key starts with "limit#".
func (k Key) pk() string { return "limit#" + k.Tenant + "#" + k.Name }

const maxName = 255

func (k Key) validate() error {
	if err := tenantid.Validate(k.Tenant); err != nil {
		return fmt.Errorf("%w: tenant: %v", ErrInvalidKey, err)
	}
	if k.Name == "" || len(k.Name) > maxName {
		return fmt.Errorf("%w: name must be 1-%d characters", ErrInvalidKey, maxName)
	}
	for i := 0; i < len(k.Name); i++ {
		c := k.Name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return fmt.Errorf("%w: name of tenant %s: only A-Z a-z 0-9 . _ : - are allowed", ErrInvalidKey, k.Tenant)
		}
	}
	return nil
}

// Limit is a configured rate. It travels with every call (it comes from
// the tenant's configuration), so a changed rate takes effect at the next
// reservation.
type Limit struct {
	// Rate is how many slots a second the limit grants in the long run.
	// Zero, negative, NaN or +Inf means unlimited: no state, no AWS call.
	// Rates below one a day count as one a day.
	Rate float64
	// Burst is how many slots may be used at one instant after an idle
	// spell; values below 1 count as 1, above 1,000,000 as 1,000,000.
	Burst int
}

// Unlimited reports whether l grants every slot at once.
func (l Limit) Unlimited() bool { return !(l.Rate > 0) || math.IsInf(l.Rate, 1) }

// Options tune the 429 feedback and the items' lifetime. Zero values take
// the defaults below.
type Options struct {
	// Retention is how long an idle limit's item lives after its schedule
	// and its recovery end (its TTL). Default 1 hour.
	Retention time.Duration
	// Penalty is the pause after a 429 without a Retry-After, doubled for
	// each consecutive one (before the rate recovered, with no 429 with a
	// Retry-After between them). Default 1 second.
	Penalty time.Duration
	// MaxPenalty caps every pause, a Retry-After's too. Default 5 minutes.
	MaxPenalty time.Duration
	// MinFactor is the floor of the effective-rate factor that 429s halve.
	// Default 1/32.
	MinFactor float64
	// Recovery is how long the factor takes to climb linearly from 0 to 1
	// without a 429 (from ½ in half that time). Default 30 seconds.
	Recovery time.Duration
}

// Defaults of Options.
const (
	DefaultRetention  = time.Hour
	DefaultPenalty    = time.Second
	DefaultMaxPenalty = 5 * time.Minute
	DefaultMinFactor  = 1.0 / 32
	DefaultRecovery   = 30 * time.Second
)

// withDefaults fills zero (or out of range) values.
func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Retention, DefaultRetention)
	def(&o.Penalty, DefaultPenalty)
	def(&o.MaxPenalty, DefaultMaxPenalty)
	def(&o.Recovery, DefaultRecovery)
	if !(o.MinFactor > 0 && o.MinFactor <= 1) {
		o.MinFactor = DefaultMinFactor
	}
	return o
}

// Reservation is what Reserve granted.
type Reservation struct {
	// Slots are the times the granted slots may be used, non-decreasing,
	// at most the n asked for, none later than now+maxWait. Using slot i
	// means sleeping until Slots[i] and then delivering one message; a slot
	// not used is lost (it is not given back).
	Slots []time.Time
	// Retry is set when fewer than n slots were granted: the earliest time
	// at which a Reserve can be granted the next slot within maxWait.
	Retry time.Time
}

// State is a limit's stored state, for tests and operators.
type State struct {
	// Next is the theoretical arrival time: with burst 1, the earliest
	// slot the next reservation can get.
	Next time.Time
	// Factor is the fraction of the configured rate in force at the time
	// asked (429s halve it, time without one raises it back to 1).
	Factor float64
	// Strikes counts the 429s without a Retry-After in a row (since the
	// factor was last whole, or a 429 said when to come back): the next
	// one pauses Penalty doubled Strikes times.
	Strikes int
	// Penalty is the end of the last pause a 429 imposed.
	Penalty time.Time
	// Expires is the item's TTL.
	Expires time.Time
}

// Scales of the stored integers.
const (
	whole       = 1_000_000 // factor in parts per million
	second      = int64(time.Second / time.Microsecond)
	maxInterval = 24 * 3600 * second
	maxBurst    = 1_000_000
	// maxAttempts bounds the conditional writes of one call.
	maxAttempts = 10
)

// state is a limit's stored state, in microseconds. The zero state with
// factor whole is an absent item.
type state struct {
	exists bool
	// tat is the theoretical arrival time: the schedule of every slot
	// granted so far ends there.
	tat int64
	// factor is the effective-rate factor (ppm) the last counted 429 set;
	// it recovers linearly from penalty on (factorAt).
	factor int64
	// penalty is the end of the last 429's pause.
	penalty int64
	strikes int64 // unguided 429s in a row (State.Strikes)
	expires int64 // epoch seconds
}

var absent = state{factor: whole}

// factorAt is the effective-rate factor at now: the stored one, raised
// linearly since the pause ended (additive increase without a write).
func (s state) factorAt(now int64, o Options) int64 {
	elapsed, rec := now-s.penalty, o.Recovery.Microseconds()
	switch {
	case elapsed <= 0:
		return s.factor
	case elapsed >= rec:
		return whole
	}
	return min(whole, s.factor+elapsed*whole/rec)
}

// strikesAt is the count of consecutive unguided 429s at now: none once the factor
// is whole again.
func (s state) strikesAt(now int64, o Options) int64 {
	if s.factorAt(now, o) == whole {
		return 0
	}
	return s.strikes
}

func (s state) public(now int64, o Options) State {
	return State{
		Next:    epoch.FromMicros(s.tat),
		Factor:  float64(s.factorAt(now, o)) / whole,
		Strikes: int(s.strikesAt(now, o)),
		Penalty: epoch.FromMicros(s.penalty),
		Expires: epoch.FromSeconds(s.expires),
	}
}

// interval is the time between two slots at the configured rate scaled by
// factor (ppm), rounded up to a microsecond, so never faster than the rate.
func interval(l Limit, factor int64) int64 {
	t := math.Ceil(1e6 * whole / (l.Rate * float64(factor)))
	if !(t < float64(maxInterval)) {
		return maxInterval
	}
	return max(1, int64(t))
}

// tolerance is how far ahead of the schedule a slot may be used: the
// burst, in intervals of the configured rate. It does not shrink or grow
// with the factor, so a slowed limit bursts fewer slots and the bound
// burst + rate×t holds whatever the factor did.
func tolerance(l Limit) int64 {
	return int64(min(max(l.Burst, 1), maxBurst)-1) * interval(l, whole)
}

// plan is a reservation decided on a state: k slots from base, step apart,
// tolerance ahead of the schedule.
type plan struct {
	k                    int
	base, step, tol      int64
	fromTAT              bool  // base is the stored tat (else now)
	lo, hi               int64 // with fromTAT: the tats giving the same k
	expires              int64
	now, wait, requested int64
}

// planReserve decides a reservation of n slots at now within wait (µs):
// the generic cell rate algorithm (GCRA) scheduling instead of refusing.
// Slot i is at max(now, base + i·step − tol), base = max(tat, now); the
// slots that fall after now+wait are not granted; tat moves to
// base + k·step.
func planReserve(s state, l Limit, o Options, n int, now, wait int64) plan {
	p := plan{step: interval(l, s.factorAt(now, o)), tol: tolerance(l), base: now, now: now, wait: wait, requested: int64(n)}
	if s.exists && s.tat >= now {
		p.base, p.fromTAT = s.tat, true
	}
	if room := now + wait + p.tol - p.base; room >= 0 {
		p.k = int(min(int64(n), room/p.step+1))
	}
	// The tats for which exactly k slots fit: at most hi for k, above lo
	// for k+1 when fewer than n fit.
	p.hi = now + wait + p.tol - int64(max(p.k-1, 0))*p.step
	p.lo = now
	if p.k < n {
		p.lo = max(now, now+wait+p.tol-int64(p.k)*p.step+1)
	}
	end := now + wait + p.tol + p.step // no tat after this reservation is later
	p.expires = expiry(max(end, s.penalty+o.Recovery.Microseconds()), o)
	return p
}

// after returns the state after p, granted on s with base as the stored
// tat was (p.base unless the store read it back).
func (p plan) after(s state, base int64) state {
	if !s.exists {
		s = absent
		s.exists = true
	}
	s.tat, s.expires = base+int64(p.k)*p.step, p.expires
	return s
}

// reservation returns p's slots from base.
func (p plan) reservation(base int64) Reservation {
	slot := func(i int) int64 { return max(p.now, base+int64(i)*p.step-p.tol) }
	r := Reservation{Slots: make([]time.Time, p.k)}
	for i := range p.k {
		r.Slots[i] = epoch.FromMicros(slot(i))
	}
	if int64(p.k) < p.requested {
		r.Retry = epoch.FromMicros(slot(p.k) - p.wait)
	}
	return r
}

// planSlow decides the state after a 429 at now with the given
// Retry-After (µs, ≤ 0 when absent); its pause ends at next.penalty. It
// raises the tat to at least x and the TTL to at least e. write is
// false when the state does not change: a 429 during the pause (the storm
// of the requests already under way) neither halves the factor again nor
// counts a strike, and extends the pause only to a later Retry-After.
// Pauses end on whole seconds, so that concurrent reports of one 429
// storm compute the same end and write at most once.
func planSlow(s state, l Limit, o Options, retryAfter, now int64) (next state, x, e int64, write bool) {
	next = s
	if !next.exists {
		next = absent
		next.exists = true
	}
	maxPenalty := o.MaxPenalty.Microseconds()
	ceil := func(t int64) int64 { return (t + second - 1) / second * second }
	if now < s.penalty {
		if retryAfter <= 0 || ceil(now+min(retryAfter, maxPenalty)) <= s.penalty {
			return s, 0, 0, false
		}
		next.penalty = ceil(now + min(retryAfter, maxPenalty))
	} else {
		// A Retry-After says how long: the pause is the target's, and the
		// doubling of unguided pauses starts over. Counted across guided
		// 429s, a throttle's storm of them would make the first 429
		// without one pause MaxPenalty.
		d := retryAfter
		next.strikes = 0
		if d <= 0 {
			next.strikes = s.strikesAt(now, o) + 1
			d = o.Penalty.Microseconds() << min(next.strikes-1, 30)
		}
		next.penalty = ceil(now + min(d, maxPenalty))
		next.factor = max(int64(math.Ceil(o.MinFactor*whole)), s.factorAt(now, o)/2)
	}
	// The schedule resumes at the pause's end, one slot at a time: no
	// burst follows it.
	// The TTL only grows here: the stored one covers the stored schedule.
	x = next.penalty + tolerance(l)
	e = expiry(max(x, next.penalty+o.Recovery.Microseconds()), o)
	next.tat, next.expires = max(s.tat, x), max(s.expires, e)
	return next, x, e, true
}

// expiry is the TTL (epoch seconds) of an item whose schedule and recovery
// end at us.
func expiry(us int64, o Options) int64 {
	return (us+second-1)/second + int64(o.Retention/time.Second)
}

// unlimited grants n slots at now.
func unlimited(n int, now time.Time) Reservation {
	r := Reservation{Slots: make([]time.Time, n)}
	for i := range r.Slots {
		r.Slots[i] = now
	}
	return r
}

// unlimitedPause is Slow's answer for an unlimited limit: the pause, with
// nothing stored.
func unlimitedPause(o Options, retryAfter time.Duration, now time.Time) time.Time {
	if retryAfter <= 0 {
		retryAfter = o.Penalty
	}
	return now.Add(min(retryAfter, o.MaxPenalty))
}

// check validates a call's key.
func check(k Key) error { return k.validate() }
