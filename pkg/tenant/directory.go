package tenant

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Directory answers whether a tenant id is onboarded without an AWS call per
// request: it holds the list of onboarded ids, loaded on first use and again
// when Refresh has passed, and resolves only listed ids through its Cache. A
// request for any other id costs nothing — no lookup, no cache entry — so
// random tenant ids cannot run up the credential store's bill, throttle it
// for real tenants, or grow memory.
//
// A new tenant is served within Refresh of being listed. When a refresh
// fails, the previous list stays in use and the refresh is retried after
// RetryAfterFailure; only a first load that fails is an error. The list
// loads on a context of its own, like the Cache's lookups.
//
// Directory is safe for concurrent use.
type Directory[T any] struct {
	list    func(ctx context.Context) ([]string, error)
	cache   *Cache[T]
	refresh time.Duration
	now     func() time.Time

	mu      sync.Mutex
	ids     map[string]bool // nil until the first load succeeds
	next    time.Time       // when to load again
	loading chan struct{}   // non-nil while a load runs
	err     error           // of the last load
}

// Defaults of a Directory.
const (
	DefaultRefresh       = time.Minute
	RetryAfterFailure    = 10 * time.Second
	directoryLoadTimeout = 5 * time.Second
)

// NewDirectory returns a directory listing ids with list and resolving them
// with cache. A zero refresh takes DefaultRefresh; now may be nil.
func NewDirectory[T any](list func(ctx context.Context) ([]string, error), cache *Cache[T], refresh time.Duration, now func() time.Time) *Directory[T] {
	if refresh <= 0 {
		refresh = DefaultRefresh
	}
	if now == nil {
		now = time.Now
	}
	return &Directory[T]{list: list, cache: cache, refresh: refresh, now: now}
}

// Get returns the configuration of tenant id. It returns an error wrapping
// ErrNotFound, without any lookup, when id is not onboarded; the cache's
// errors otherwise; and a wrapped error of the list when the list has never
// loaded.
func (d *Directory[T]) Get(ctx context.Context, id string) (T, error) {
	var zero T
	ok, err := d.Known(ctx, id)
	if err != nil {
		return zero, err
	}
	if !ok {
		return zero, fmt.Errorf("tenant %s: %w", id, ErrNotFound)
	}
	return d.cache.Get(ctx, id)
}

// Cached returns how many tenants' configurations the directory's cache
// holds.
func (d *Directory[T]) Cached() int { return d.cache.Len() }

// Known reports whether id is onboarded, loading the list when it is due.
func (d *Directory[T]) Known(ctx context.Context, id string) (bool, error) {
	d.mu.Lock()
	if d.ids != nil && d.now().Before(d.next) {
		ok := d.ids[id]
		d.mu.Unlock()
		return ok, nil
	}
	wait := d.loading
	if wait == nil {
		wait = make(chan struct{})
		d.loading = wait
		go d.load(context.WithoutCancel(ctx), wait)
	}
	d.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ids == nil {
		return false, fmt.Errorf("list onboarded tenants: %w", d.err)
	}
	return d.ids[id], nil
}

func (d *Directory[T]) load(ctx context.Context, done chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, directoryLoadTimeout)
	defer cancel()
	ids, err := d.list(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.err = err
	if err != nil {
		d.next = d.now().Add(RetryAfterFailure)
	} else {
		d.ids = make(map[string]bool, len(ids))
		for _, id := range ids {
			d.ids[id] = true
		}
		d.next = d.now().Add(d.refresh)
	}
	d.loading = nil
	close(done)
}
