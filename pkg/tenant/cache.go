package tenant

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Cache memoises a lookup per tenant id for TTL, and remembers ErrNotFound
// for NegativeTTL so that requests for made-up tenants cannot run up the
// credential store's bill. Other errors are not cached. Cache is safe for
// concurrent use; concurrent misses for one id share a single lookup.
type Cache[T any] struct {
	load        func(ctx context.Context, id string) (T, error)
	ttl, negTTL time.Duration
	now         func() time.Time

	mu      sync.Mutex
	entries map[string]*entry[T]
}

type entry[T any] struct {
	ready   chan struct{}
	val     T
	err     error
	expires time.Time
}

// Default TTLs: a rotated secret is picked up within five minutes (rotation
// keeps old and new secrets valid together, so nothing fails meanwhile).
const (
	DefaultTTL         = 5 * time.Minute
	DefaultNegativeTTL = time.Minute
)

// NewCache wraps load. Zero TTLs take the defaults; now may be nil.
func NewCache[T any](load func(ctx context.Context, id string) (T, error), ttl, negTTL time.Duration, now func() time.Time) *Cache[T] {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if negTTL <= 0 {
		negTTL = DefaultNegativeTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Cache[T]{load: load, ttl: ttl, negTTL: negTTL, now: now, entries: map[string]*entry[T]{}}
}

// Get returns the cached value for id, loading it when absent or expired.
func (c *Cache[T]) Get(ctx context.Context, id string) (T, error) {
	c.mu.Lock()
	e, ok := c.entries[id]
	if ok {
		select {
		case <-e.ready:
			if c.now().Before(e.expires) {
				c.mu.Unlock()
				return e.val, e.err
			}
			ok = false
		default: // a load is running: wait for it
		}
	}
	if !ok {
		e = &entry[T]{ready: make(chan struct{})}
		c.entries[id] = e
		c.mu.Unlock()
		e.val, e.err = c.load(ctx, id)
		switch {
		case e.err == nil:
			e.expires = c.now().Add(c.ttl)
		case errors.Is(e.err, ErrNotFound):
			e.expires = c.now().Add(c.negTTL)
		default:
			c.mu.Lock()
			delete(c.entries, id) // do not cache transient failures
			c.mu.Unlock()
		}
		close(e.ready)
		return e.val, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.ready:
		return e.val, e.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
