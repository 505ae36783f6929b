package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/internal/epoch"
)

// Memory is an in-process rate limiter with the same semantics as
// DynamoDB: both decide with the same functions, on the state Memory
// holds and DynamoDB stores. It backs the simulation, unit tests and
// benchmarks, and passes the same contract suite. It is safe for
// concurrent use; share one Memory between the "invocations" of a test.
type Memory struct {
	opts Options

	mu     sync.Mutex
	limits map[string]state
}

// NewMemory returns an empty in-memory rate limiter.
func NewMemory(opts Options) *Memory {
	return &Memory{opts: opts.withDefaults(), limits: map[string]state{}}
}

// Reserve behaves like (*DynamoDB).Reserve.
func (m *Memory) Reserve(_ context.Context, k Key, l Limit, n int, maxWait time.Duration, now time.Time) (Reservation, error) {
	if err := check(k); err != nil {
		return Reservation{}, err
	}
	if l.Unlimited() || n <= 0 {
		return unlimited(max(n, 0), now), nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.get(k)
	p := planReserve(s, l, m.opts, n, epoch.Micros(now), max(maxWait, 0).Microseconds())
	if p.k > 0 {
		m.limits[k.pk()] = p.after(s, p.base)
	}
	return p.reservation(p.base), nil
}

// Slow behaves like (*DynamoDB).Slow.
func (m *Memory) Slow(_ context.Context, k Key, l Limit, retryAfter time.Duration, now time.Time) (time.Time, error) {
	if err := check(k); err != nil {
		return time.Time{}, err
	}
	if l.Unlimited() {
		return unlimitedPause(m.opts, retryAfter, now), nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next, _, _, write := planSlow(m.get(k), l, m.opts, retryAfter.Microseconds(), epoch.Micros(now))
	if write {
		m.limits[k.pk()] = next
	}
	return epoch.FromMicros(next.penalty), nil
}

// State behaves like (*DynamoDB).State.
func (m *Memory) State(_ context.Context, k Key, now time.Time) (State, error) {
	if err := check(k); err != nil {
		return State{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.get(k)
	if !s.exists {
		return State{}, fmt.Errorf("state of %s: %w", k, ErrNotFound)
	}
	return s.public(epoch.Micros(now), m.opts), nil
}

// get returns k's state. Memory keeps items past their TTL, which
// DynamoDB deletes some time after it: by then their schedule and recovery
// are over, so an item and its absence decide alike.
func (m *Memory) get(k Key) state {
	s, ok := m.limits[k.pk()]
	if !ok {
		return absent
	}
	return s
}
