// Package ratelimittest is the contract suite every rate limiter must
// pass: the in-memory twin, and the DynamoDB store against DynamoDB Local.
package ratelimittest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/internal/lease"
	"github.com/hookpack/hookpack/pkg/ratelimit"
)

// Store is the behaviour under test.
type Store interface {
	Reserve(ctx context.Context, k ratelimit.Key, l ratelimit.Limit, n int, maxWait time.Duration, now time.Time) (ratelimit.Reservation, error)
	Slow(ctx context.Context, k ratelimit.Key, l ratelimit.Limit, retryAfter time.Duration, now time.Time) (time.Time, error)
	State(ctx context.Context, k ratelimit.Key, now time.Time) (ratelimit.State, error)
}

// Options are the options every store under test is built with.
var Options = ratelimit.Options{
	Retention:  time.Hour,
	Penalty:    time.Second,
	MaxPenalty: time.Minute,
	MinFactor:  1.0 / 8,
	Recovery:   20 * time.Second,
}

// Tenant is the tenant the suite reserves under.
const Tenant = "acme"

// Run runs the contract. newStores returns a function giving handles on
// one fresh storage, built with Options: each handle stands for another
// Lambda invocation (for DynamoDB, another container with its own memory
// of the items), all of them sharing the limits.
func Run(t *testing.T, newStores func(t *testing.T) func() Store) {
	ctx := context.Background()
	key := func(t *testing.T) ratelimit.Key {
		return ratelimit.Key{Tenant: Tenant, Name: fmt.Sprintf("dest:%d.example.com", time.Now().UnixNano())}
	}
	reserve := func(t *testing.T, s Store, k ratelimit.Key, l ratelimit.Limit, n int, maxWait time.Duration, now time.Time) ratelimit.Reservation {
		t.Helper()
		r, err := s.Reserve(ctx, k, l, n, maxWait, now)
		if err != nil {
			t.Fatalf("Reserve(%s, %+v, %d) = %v", k, l, n, err)
		}
		return r
	}
	slow := func(t *testing.T, s Store, k ratelimit.Key, l ratelimit.Limit, retryAfter time.Duration, now time.Time) time.Time {
		t.Helper()
		end, err := s.Slow(ctx, k, l, retryAfter, now)
		if err != nil {
			t.Fatalf("Slow(%s, %v) = %v", k, retryAfter, err)
		}
		return end
	}
	state := func(t *testing.T, s Store, k ratelimit.Key, now time.Time) ratelimit.State {
		t.Helper()
		st, err := s.State(ctx, k, now)
		if err != nil {
			t.Fatalf("State(%s) = %v", k, err)
		}
		return st
	}

	t.Run("UnlimitedKeepsNoState", func(t *testing.T) {
		s, now := newStores(t)(), lease.NewClock().Now()
		k := key(t)
		for _, rate := range []float64{0, -1, math.NaN(), math.Inf(1)} {
			l := ratelimit.Limit{Rate: rate, Burst: 1}
			r := reserve(t, s, k, l, 3, 0, now)
			if want := []time.Time{now, now, now}; !slices.EqualFunc(r.Slots, want, time.Time.Equal) || !r.Retry.IsZero() {
				t.Errorf("Reserve(rate %v) = %+v, want 3 slots now", rate, r)
			}
			if end := slow(t, s, k, l, 0, now); !end.Equal(now.Add(Options.Penalty)) {
				t.Errorf("Slow(rate %v) = %v, want now+Penalty", rate, end)
			}
			if end := slow(t, s, k, l, time.Hour, now); !end.Equal(now.Add(Options.MaxPenalty)) {
				t.Errorf("Slow(rate %v, 1h) = %v, want now+MaxPenalty", rate, end)
			}
		}
		if r := reserve(t, s, k, ratelimit.Limit{Rate: 1, Burst: 1}, 0, time.Second, now); len(r.Slots) != 0 {
			t.Errorf("Reserve(n=0) = %+v, want no slot", r)
		}
		if st, err := s.State(ctx, k, now); !errors.Is(err, ratelimit.ErrNotFound) {
			t.Errorf("State() after unlimited calls = %+v, %v; want ErrNotFound", st, err)
		}
	})

	t.Run("BurstThenRate", func(t *testing.T) {
		clock, s, k := lease.NewClock(), newStores(t)(), key(t)
		t0, ms := clock.Now(), time.Millisecond
		l := ratelimit.Limit{Rate: 10, Burst: 3}
		r := reserve(t, s, k, l, 5, 10*time.Second, t0)
		want := []time.Time{t0, t0, t0, t0.Add(100 * ms), t0.Add(200 * ms)}
		if !slices.EqualFunc(r.Slots, want, time.Time.Equal) || !r.Retry.IsZero() {
			t.Errorf("Reserve(5) = %v, %v; want %v", r.Slots, r.Retry, want)
		}
		r = reserve(t, s, k, l, 2, 10*time.Second, t0)
		if want := []time.Time{t0.Add(300 * ms), t0.Add(400 * ms)}; !slices.EqualFunc(r.Slots, want, time.Time.Equal) {
			t.Errorf("second Reserve(2) = %v, want %v: the schedule goes on", r.Slots, want)
		}
		if st := state(t, s, k, t0); !st.Next.Equal(t0.Add(700*ms)) || st.Factor != 1 || st.Strikes != 0 {
			t.Errorf("State() = %+v, want Next t0+700ms, factor 1, no strike", st)
		}
		t1 := t0.Add(10 * time.Second) // idle: the burst is back
		r = reserve(t, s, k, l, 4, 10*time.Second, t1)
		if want := []time.Time{t1, t1, t1, t1.Add(100 * ms)}; !slices.EqualFunc(r.Slots, want, time.Time.Equal) {
			t.Errorf("Reserve(4) after idling = %v, want %v", r.Slots, want)
		}
	})

	t.Run("HorizonGrantsWhatFitsAndWhenToRetry", func(t *testing.T) {
		clock, s, k := lease.NewClock(), newStores(t)(), key(t)
		t0, sec := clock.Now(), time.Second
		l := ratelimit.Limit{Rate: 1, Burst: 1}
		r := reserve(t, s, k, l, 10, 3*sec, t0)
		want := []time.Time{t0, t0.Add(sec), t0.Add(2 * sec), t0.Add(3 * sec)}
		if !slices.EqualFunc(r.Slots, want, time.Time.Equal) || !r.Retry.Equal(t0.Add(sec)) {
			t.Errorf("Reserve(10, maxWait 3s) = %v retry %v; want %v retry t0+1s", r.Slots, r.Retry, want)
		}
		if r := reserve(t, s, k, l, 10, 3*sec, t0); len(r.Slots) != 0 || !r.Retry.Equal(t0.Add(sec)) {
			t.Errorf("Reserve(10) on a full horizon = %v retry %v; want none, retry t0+1s", r.Slots, r.Retry)
		}
		r = reserve(t, s, k, l, 10, 3*sec, t0.Add(sec))
		if !slices.EqualFunc(r.Slots, []time.Time{t0.Add(4 * sec)}, time.Time.Equal) || !r.Retry.Equal(t0.Add(2*sec)) {
			t.Errorf("Reserve(10) at Retry = %v retry %v; want [t0+4s] retry t0+2s", r.Slots, r.Retry)
		}
		r = reserve(t, s, k, l, 2, 0, t0.Add(5*sec))
		if !slices.EqualFunc(r.Slots, []time.Time{t0.Add(5 * sec)}, time.Time.Equal) || !r.Retry.Equal(t0.Add(6*sec)) {
			t.Errorf("Reserve(2, maxWait 0) = %v retry %v; want [t0+5s] retry t0+6s", r.Slots, r.Retry)
		}
	})

	t.Run("NeverFasterThanRateAcrossReservers", func(t *testing.T) {
		clock, stores, k := lease.NewClock(), newStores(t), key(t)
		l := ratelimit.Limit{Rate: 40, Burst: 4}
		const reservers, rounds = 8, 20
		handles := []Store{stores(), stores(), stores(), stores()}
		var (
			mu        sync.Mutex
			all       []time.Time
			contended int
			wg        sync.WaitGroup
		)
		for g := range reservers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, rnd := handles[g%len(handles)], rand.New(rand.NewPCG(uint64(g), 1))
				var last time.Time
				for range rounds {
					now := clock.Now()
					if rnd.IntN(40) == 0 {
						if _, err := s.Slow(ctx, k, l, time.Duration(rnd.IntN(3))*100*time.Millisecond, now); err != nil {
							t.Errorf("Slow() = %v", err)
							return
						}
					}
					maxWait := 400 * time.Millisecond
					r, err := s.Reserve(ctx, k, l, 1+rnd.IntN(10), maxWait, now)
					if errors.Is(err, ratelimit.ErrContention) {
						mu.Lock()
						contended++
						mu.Unlock()
						continue
					}
					if err != nil {
						t.Errorf("Reserve() = %v", err)
						return
					}
					for _, slot := range r.Slots {
						if slot.Before(last) || slot.Before(now) || slot.After(now.Add(maxWait)) {
							t.Errorf("reserver %d got slot %v after %v at %v: want non-decreasing slots within [now, now+maxWait]", g, slot, last, now)
						}
						last = slot
					}
					mu.Lock()
					all = append(all, r.Slots...)
					mu.Unlock()
					clock.Advance(time.Duration(rnd.IntN(60)) * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		if len(all) < 50 || contended > reservers*rounds/10 {
			t.Fatalf("granted %d slots, %d reservations contended; want at least 50 slots and few contended", len(all), contended)
		}
		if i, j, ok := WithinRate(all, l); !ok {
			t.Errorf("%d slots granted from %v to %v: more than burst %d + rate %v × %v", j-i+1, all[i], all[j], l.Burst, l.Rate, all[j].Sub(all[i]))
		}
		t.Logf("%d slots over %v, %d reservations contended", len(all), all[len(all)-1].Sub(all[0]), contended)
	})

	t.Run("SlowPausesEveryInvocation", func(t *testing.T) {
		clock, stores, k := lease.NewClock(), newStores(t), key(t)
		a, b, c := stores(), stores(), stores()
		t0, ms := clock.Now(), time.Millisecond
		l := ratelimit.Limit{Rate: 10, Burst: 5}
		reserve(t, a, k, l, 3, time.Second, t0)
		if end := slow(t, b, k, l, 1500*ms, t0); !end.Equal(t0.Add(2 * time.Second)) {
			t.Errorf("Slow(Retry-After 1.5s) = %v, want t0+2s (pauses end on whole seconds)", end)
		}
		r := reserve(t, a, k, l, 4, 10*time.Second, t0)
		want := []time.Time{t0.Add(2000 * ms), t0.Add(2200 * ms), t0.Add(2400 * ms), t0.Add(2600 * ms)}
		if !slices.EqualFunc(r.Slots, want, time.Time.Equal) {
			t.Errorf("Reserve(4) after another invocation's Slow = %v, want %v: after the pause, at half the rate, no burst", r.Slots, want)
		}
		if st := state(t, c, k, t0); st.Factor != 0.5 || st.Strikes != 0 || !st.Penalty.Equal(t0.Add(2*time.Second)) {
			t.Errorf("State() = %+v, want factor 0.5, no strike (the 429 said when), pause until t0+2s", st)
		}
		// The rest of the storm: requests sent before the pause get their
		// 429s during it, and change nothing.
		for range 3 {
			if end := slow(t, c, k, l, 0, t0.Add(100*ms)); !end.Equal(t0.Add(2 * time.Second)) {
				t.Errorf("Slow() during the pause = %v, want its end t0+2s", end)
			}
		}
		if st := state(t, a, k, t0); st.Factor != 0.5 || st.Strikes != 0 {
			t.Errorf("State() after 429s during the pause = %+v, want factor 0.5 and no strike still", st)
		}
		// A later Retry-After during the pause extends it.
		if end := slow(t, c, k, l, 5*time.Second, t0.Add(100*ms)); !end.Equal(t0.Add(6 * time.Second)) {
			t.Errorf("Slow(Retry-After 5s) during the pause = %v, want t0+6s", end)
		}
		r = reserve(t, b, k, l, 1, 10*time.Second, t0.Add(200*ms))
		if len(r.Slots) != 1 || r.Slots[0].Before(t0.Add(6*time.Second)) {
			t.Errorf("Reserve(1) after the extension = %v, want a slot from t0+6s", r.Slots)
		}
		if st := state(t, c, k, t0); st.Factor != 0.5 || st.Strikes != 0 {
			t.Errorf("State() after the extension = %+v, want factor 0.5 and no strike still", st)
		}
		r = reserve(t, b, k, l, 1, time.Second, t0.Add(300*ms))
		if len(r.Slots) != 0 || r.Retry.Before(t0.Add(5*time.Second)) {
			t.Errorf("Reserve(1, maxWait 1s) during the pause = %+v, want no slot and a retry from t0+5s", r)
		}
	})

	t.Run("SlowReachesInvocationsThatSawTheLimitBefore", func(t *testing.T) {
		clock, stores, k := lease.NewClock(), newStores(t), key(t)
		a, b := stores(), stores()
		t0 := clock.Now()
		l := ratelimit.Limit{Rate: 10, Burst: 1}
		reserve(t, a, k, l, 1, time.Second, t0)
		slow(t, b, k, l, 0, t0)
		// After the pause: the schedule is behind, the factor recovering
		// (0.5 + 1s/20s = 0.55 of 10/s).
		t2 := t0.Add(2 * time.Second)
		r := reserve(t, a, k, l, 2, time.Second, t2)
		if want := []time.Time{t2, t2.Add(181819 * time.Microsecond)}; !slices.EqualFunc(r.Slots, want, time.Time.Equal) {
			t.Errorf("Reserve(2) after another invocation's Slow = %v, want %v: at 0.55 of the rate", r.Slots, want)
		}
		// During the pause: the schedule is ahead, at half the rate.
		k2 := key(t)
		reserve(t, a, k2, l, 1, time.Second, t0)
		slow(t, b, k2, l, 0, t0)
		r = reserve(t, a, k2, l, 2, 10*time.Second, t0)
		if want := []time.Time{t0.Add(time.Second), t0.Add(1200 * time.Millisecond)}; !slices.EqualFunc(r.Slots, want, time.Time.Equal) {
			t.Errorf("Reserve(2) during another invocation's pause = %v, want %v: after it, at half the rate", r.Slots, want)
		}
	})

	t.Run("ConsecutiveSlowsDoubleThePauseAndHalveTheRate", func(t *testing.T) {
		clock, s, k := lease.NewClock(), newStores(t)(), key(t)
		l := ratelimit.Limit{Rate: 10, Burst: 1}
		now := clock.Now()
		for i, tt := range []struct {
			pause  time.Duration
			factor float64
		}{
			{1 * time.Second, 0.5}, {2 * time.Second, 0.25}, {4 * time.Second, 0.125}, {8 * time.Second, 0.125},
			{16 * time.Second, 0.125}, {32 * time.Second, 0.125}, {time.Minute, 0.125}, {time.Minute, 0.125},
		} {
			end := slow(t, s, k, l, 0, now)
			st := state(t, s, k, now)
			if !end.Equal(now.Add(tt.pause)) || st.Factor != tt.factor || st.Strikes != i+1 {
				t.Errorf("Slow() #%d = %v, state %+v; want a pause of %v, factor %v, %d strikes", i+1, end.Sub(now), st, tt.pause, tt.factor, i+1)
			}
			now = end // the next 429 comes as the pause ends: consecutive
		}
		if end := slow(t, s, k, l, time.Hour, now); !end.Equal(now.Add(Options.MaxPenalty)) {
			t.Errorf("Slow(Retry-After 1h) = %v, want now+MaxPenalty", end.Sub(now))
		}
	})

	t.Run("ARetryAfterStartsTheDoublingOver", func(t *testing.T) {
		// A throttle's storm of 429s, each saying when to come back, then
		// one without a Retry-After (make chaos: a throttled destination
		// squeezed to half its rate): the target's pauses are not strikes,
		// so that one pauses Penalty, not MaxPenalty.
		clock, s, k := lease.NewClock(), newStores(t)(), key(t)
		l := ratelimit.Limit{Rate: 10, Burst: 1}
		now := clock.Now()
		for i := range 12 {
			end := slow(t, s, k, l, 2*time.Second, now)
			if !end.Equal(now.Add(2 * time.Second)) {
				t.Fatalf("Slow(Retry-After 2s) #%d = %v, want a pause of 2s", i+1, end.Sub(now))
			}
			now = end
		}
		if st := state(t, s, k, now); st.Strikes != 0 || st.Factor != Options.MinFactor {
			t.Errorf("State() after 12 429s with Retry-After = %+v, want no strike and factor %v", st, Options.MinFactor)
		}
		for i, want := range []time.Duration{time.Second, 2 * time.Second} {
			end := slow(t, s, k, l, 0, now)
			if !end.Equal(now.Add(want)) {
				t.Errorf("Slow() without Retry-After #%d after them = %v, want %v", i+1, end.Sub(now), want)
			}
			now = end
		}
		if st := state(t, s, k, now); st.Strikes != 2 {
			t.Errorf("State() = %+v, want 2 strikes", st)
		}
		// A Retry-After between two unguided 429s starts over too.
		now = slow(t, s, k, l, 3*time.Second, now)
		if end := slow(t, s, k, l, 0, now); !end.Equal(now.Add(time.Second)) {
			t.Errorf("Slow() without Retry-After after one with = %v, want 1s", end.Sub(now))
		}
	})

	t.Run("RecoveryRestoresTheConfiguredRate", func(t *testing.T) {
		clock, s, k := lease.NewClock(), newStores(t)(), key(t)
		t0 := clock.Now()
		l := ratelimit.Limit{Rate: 10, Burst: 1}
		end := slow(t, s, k, l, 0, t0)
		quarter := end.Add(Options.Recovery / 4)
		if st := state(t, s, k, quarter); st.Factor != 0.75 || st.Strikes != 1 {
			t.Errorf("State() a quarter of Recovery after the pause = %+v, want factor 0.75", st)
		}
		r := reserve(t, s, k, l, 2, time.Minute, quarter)
		if len(r.Slots) != 2 || r.Slots[1].Sub(r.Slots[0]) != 133334*time.Microsecond {
			t.Errorf("Reserve(2) at factor 0.75 = %v, want slots 133.334ms apart", r.Slots)
		}
		whole := end.Add(Options.Recovery)
		if st := state(t, s, k, whole); st.Factor != 1 || st.Strikes != 0 {
			t.Errorf("State() Recovery after the pause = %+v, want factor 1 and no strike", st)
		}
		r = reserve(t, s, k, l, 3, time.Minute, whole)
		want := []time.Time{whole, whole.Add(100 * time.Millisecond), whole.Add(200 * time.Millisecond)}
		if !slices.EqualFunc(r.Slots, want, time.Time.Equal) {
			t.Errorf("Reserve(3) after recovery = %v, want %v: the configured rate", r.Slots, want)
		}
		later := whole.Add(time.Second)
		if end := slow(t, s, k, l, 0, later); !end.Equal(later.Add(Options.Penalty)) {
			t.Errorf("Slow() after recovery = %v, want a first pause of Penalty again", end.Sub(later))
		}
	})

	t.Run("ChangedRateTakesEffect", func(t *testing.T) {
		clock, s, k := lease.NewClock(), newStores(t)(), key(t)
		t0, ms := clock.Now(), time.Millisecond
		steps := []struct {
			l    ratelimit.Limit
			want []time.Duration
		}{
			{ratelimit.Limit{Rate: 10, Burst: 1}, []time.Duration{0, 100 * ms, 200 * ms}},
			{ratelimit.Limit{Rate: 2, Burst: 1}, []time.Duration{300 * ms, 800 * ms}},
			{ratelimit.Limit{Rate: 100, Burst: 1}, []time.Duration{1300 * ms, 1310 * ms}},
			{ratelimit.Limit{Rate: 100, Burst: 3}, []time.Duration{1300 * ms, 1310 * ms, 1320 * ms}},
		}
		for _, st := range steps {
			r := reserve(t, s, k, st.l, len(st.want), time.Minute, t0)
			got := make([]time.Duration, len(r.Slots))
			for i, slot := range r.Slots {
				got[i] = slot.Sub(t0)
			}
			if !slices.Equal(got, st.want) {
				t.Errorf("Reserve(%+v) = %v, want %v", st.l, got, st.want)
			}
		}
	})

	t.Run("ExpirationOutlastsScheduleAndRecovery", func(t *testing.T) {
		clock, stores, k := lease.NewClock(), newStores(t), key(t)
		s, other := stores(), stores()
		t0 := clock.Now()
		l := ratelimit.Limit{Rate: 2, Burst: 2}
		reserve(t, other, k, l, 1, 0, t0)            // other saw a short schedule
		r := reserve(t, s, k, l, 1, time.Minute, t0) // a long horizon, a short schedule
		st := state(t, s, k, t0)
		last := r.Slots[len(r.Slots)-1]
		if st.Expires.Before(last.Add(Options.Retention)) || st.Expires.Before(st.Next.Add(Options.Retention)) ||
			st.Expires.After(t0.Add(time.Minute+2*time.Second+Options.Retention)) {
			t.Errorf("Expires = %v, want from the last slot %v and Next %v + Retention to about now+maxWait+burst+Retention", st.Expires, last, st.Next)
		}
		end := slow(t, other, k, l, 0, t0)
		if after := state(t, s, k, t0); after.Expires.Before(end.Add(Options.Recovery+Options.Retention)) || after.Expires.Before(st.Expires) {
			t.Errorf("Expires after Slow = %v, want from the pause's end %v + Recovery + Retention, and never earlier than before (%v)", after.Expires, end, st.Expires)
		}
	})

	t.Run("LimitsAreIndependent", func(t *testing.T) {
		clock, s := lease.NewClock(), newStores(t)()
		now, k := clock.Now(), key(t)
		other, otherTenant := ratelimit.Key{Tenant: Tenant, Name: k.Name + "-b"}, ratelimit.Key{Tenant: "globex", Name: k.Name}
		l := ratelimit.Limit{Rate: 1, Burst: 1}
		slow(t, s, k, l, 10*time.Second, now)
		for _, o := range []ratelimit.Key{other, otherTenant} {
			if r := reserve(t, s, o, l, 1, 0, now); len(r.Slots) != 1 || !r.Slots[0].Equal(now) {
				t.Errorf("Reserve(%s) while %s is paused = %+v, want a slot now", o, k, r)
			}
		}
	})

	t.Run("InvalidKey", func(t *testing.T) {
		s, now := newStores(t)(), lease.NewClock().Now()
		l := ratelimit.Limit{Rate: 1, Burst: 1}
		for _, k := range []ratelimit.Key{
			{Tenant: "", Name: "dest:x"}, {Tenant: "Acme", Name: "dest:x"}, {Tenant: "a#b", Name: "dest:x"},
			{Tenant: Tenant, Name: ""}, {Tenant: Tenant, Name: "a#b"}, {Tenant: Tenant, Name: strings.Repeat("x", 256)},
			{Tenant: Tenant, Name: "https://hooks.example.com/p?token=s3cr3t"},
		} {
			_, errR := s.Reserve(ctx, k, l, 1, 0, now)
			_, errS := s.Slow(ctx, k, l, 0, now)
			_, errG := s.State(ctx, k, now)
			for _, err := range []error{errR, errS, errG} {
				if !errors.Is(err, ratelimit.ErrInvalidKey) || strings.Contains(fmt.Sprint(err), "s3cr3t") {
					t.Errorf("call with key %q = %v, want ErrInvalidKey without the name", k, err)
				}
			}
		}
	})
}

// WithinRate reports whether slots (in any order) keep to l: in no window
// of length t more than Burst + Rate·t of them. When they do not, i and j
// index the sorted slots of a window holding too many.
func WithinRate(slots []time.Time, l ratelimit.Limit) (i, j int, ok bool) {
	slices.SortFunc(slots, time.Time.Compare)
	for i := range slots {
		for j := i; j < len(slots); j++ {
			if float64(j-i+1) > float64(max(l.Burst, 1))+l.Rate*slots[j].Sub(slots[i]).Seconds()+1e-9 {
				return i, j, false
			}
		}
	}
	return 0, 0, true
}
