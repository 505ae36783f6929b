package tenant

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"
)

// Cache memoises a lookup per tenant id for TTL. It remembers ErrNotFound
// and ErrInvalid for NegativeTTL, so a tenant whose configuration is missing
// or broken costs one lookup per NegativeTTL, not one per request; other
// errors are not cached. It holds at most MaxEntries ids and evicts the
// least recently used one to make room, so its memory is bounded whatever
// ids it is asked for.
//
// Cache is safe for concurrent use. Concurrent misses for one id share a
// single lookup, which runs on a context of its own (the values of the
// first caller's, its own timeout): a caller whose context ends stops
// waiting, but the lookup carries on for the others.
type Cache[T any] struct {
	load        func(ctx context.Context, id string) (T, error)
	ttl, negTTL time.Duration
	now         func() time.Time
	// MaxEntries bounds the cache (DefaultMaxEntries when NewCache is
	// given no options). LoadTimeout bounds one lookup.
	maxEntries  int
	loadTimeout time.Duration

	mu      sync.Mutex
	entries map[string]*list.Element // of *entry[T]
	lru     list.List                // front = most recently used
}

type entry[T any] struct {
	id      string
	ready   chan struct{}
	val     T
	err     error
	expires time.Time
}

// Defaults. A rotated secret is picked up within five minutes (rotation
// keeps old and new secrets valid together, so nothing fails meanwhile); a
// missing or invalid configuration is retried after ten seconds, so a fix
// takes effect quickly while a flood of requests still costs one lookup per
// ten seconds.
const (
	DefaultTTL         = 5 * time.Minute
	DefaultNegativeTTL = 10 * time.Second
	DefaultMaxEntries  = 10000
	DefaultLoadTimeout = 5 * time.Second
)

// CacheOptions are the optional limits of a Cache; zero values take the
// defaults.
type CacheOptions struct {
	MaxEntries  int
	LoadTimeout time.Duration
}

// NewCache wraps load. Zero TTLs take the defaults; now may be nil; opts
// holds at most one CacheOptions.
func NewCache[T any](load func(ctx context.Context, id string) (T, error), ttl, negTTL time.Duration, now func() time.Time, opts ...CacheOptions) *Cache[T] {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if negTTL <= 0 {
		negTTL = DefaultNegativeTTL
	}
	if now == nil {
		now = time.Now
	}
	var o CacheOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.LoadTimeout <= 0 {
		o.LoadTimeout = DefaultLoadTimeout
	}
	return &Cache[T]{load: load, ttl: ttl, negTTL: negTTL, now: now, maxEntries: o.MaxEntries, loadTimeout: o.LoadTimeout,
		entries: map[string]*list.Element{}}
}

// Len returns the number of ids cached (loads in progress included).
func (c *Cache[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Get returns the cached value for id, loading it when absent or expired.
// It returns ctx.Err() when ctx ends before the lookup does.
func (c *Cache[T]) Get(ctx context.Context, id string) (T, error) {
	c.mu.Lock()
	el, ok := c.entries[id]
	var e *entry[T]
	if ok {
		e = el.Value.(*entry[T])
		select {
		case <-e.ready:
			if !c.now().Before(e.expires) {
				c.remove(el)
				ok = false
			}
		default: // a lookup is running: wait for it
		}
	}
	if ok {
		c.lru.MoveToFront(el)
	} else {
		e = &entry[T]{id: id, ready: make(chan struct{})}
		for len(c.entries) >= c.maxEntries {
			c.remove(c.lru.Back())
		}
		c.entries[id] = c.lru.PushFront(e)
		go c.fill(context.WithoutCancel(ctx), e)
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

// fill runs the lookup of e and publishes its result.
func (c *Cache[T]) fill(ctx context.Context, e *entry[T]) {
	ctx, cancel := context.WithTimeout(ctx, c.loadTimeout)
	defer cancel()
	val, err := c.load(ctx, e.id)
	c.mu.Lock()
	defer c.mu.Unlock()
	e.val, e.err = val, err
	switch {
	case err == nil:
		e.expires = c.now().Add(c.ttl)
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalid):
		e.expires = c.now().Add(c.negTTL)
	default:
		// Transient failures are not cached: the waiters get the error,
		// the next request looks up again.
		if el, ok := c.entries[e.id]; ok && el.Value.(*entry[T]) == e {
			c.remove(el)
		}
	}
	close(e.ready)
}

// remove drops el; c.mu is held.
func (c *Cache[T]) remove(el *list.Element) {
	delete(c.entries, el.Value.(*entry[T]).id)
	c.lru.Remove(el)
}
