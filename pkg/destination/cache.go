package destination

import (
	"context"
	"maps"
	"sync"
	"time"
)

// DefaultCacheTTL is how long a Cache trusts a tenant's states: a pause
// reaches every worker container within it.
const DefaultCacheTTL = 10 * time.Second

// store is what a Cache wraps (Memory, DynamoDB).
type store interface {
	States(ctx context.Context, tenantID string) (States, error)
	Failed(ctx context.Context, tenantID, name, reason string, now time.Time, after time.Duration, seen State) (State, error)
	Recovered(ctx context.Context, tenantID, name string, now time.Time, seen State) (State, error)
}

// Cache is a worker container's view of the store: a tenant's states are
// read at most once per TTL, and the states its own Failed and Recovered
// return replace the cached ones, so a container that started a streak
// does not start it again. It is safe for concurrent use; build one per
// container and share it between invocations.
type Cache struct {
	src store
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	tenants map[string]cached
}

type cached struct {
	states States
	at     time.Time
}

// maxCached bounds the tenants remembered (forgetting costs a read).
const maxCached = 10_000

// NewCache returns a cache of src trusting what it read for ttl
// (≤ 0: DefaultCacheTTL), on clock now (nil: time.Now).
func NewCache(src store, ttl time.Duration, now func() time.Time) *Cache {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Cache{src: src, ttl: ttl, now: now, tenants: map[string]cached{}}
}

// States returns the tenant's states as read less than the TTL ago, or
// reads them (the store's errors). The map is the caller's.
func (c *Cache) States(ctx context.Context, tenantID string) (States, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.tenants[tenantID]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return maps.Clone(e.states), nil
	}
	s, err := c.src.States(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tenants) >= maxCached {
		clear(c.tenants)
	}
	c.tenants[tenantID] = cached{states: s, at: now}
	return maps.Clone(s), nil
}

// Failed is the store's Failed; the state it returns replaces the cached one.
func (c *Cache) Failed(ctx context.Context, tenantID, name, reason string, now time.Time, after time.Duration, seen State) (State, error) {
	s, err := c.src.Failed(ctx, tenantID, name, reason, now, after, seen)
	if err == nil {
		c.note(tenantID, name, s)
	}
	return s, err
}

// Recovered is the store's Recovered; the state it returns replaces the
// cached one.
func (c *Cache) Recovered(ctx context.Context, tenantID, name string, now time.Time, seen State) (State, error) {
	s, err := c.src.Recovered(ctx, tenantID, name, now, seen)
	if err == nil {
		c.note(tenantID, name, s)
	}
	return s, err
}

// note replaces a cached destination's state (a tenant not cached stays so).
func (c *Cache) note(tenantID, name string, s State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.tenants[tenantID]
	if !ok {
		return
	}
	e.states = maps.Clone(e.states)
	if e.states == nil {
		e.states = States{}
	}
	e.states[name] = s
	c.tenants[tenantID] = e
}
