// Package lease holds the skeleton the idempotency store and the effect
// ledger share: store options with their defaults, the ledger's random
// lease tokens, and the settable clock their contract suites drive.
package lease

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// Options configure a lease store. Zero values take the store's defaults.
type Options struct {
	// Retention is how long a record counts: its TTL, restarted when it
	// completes.
	Retention time.Duration
	// Lease is how long a claim holds its record (in the ledger, the lease
	// of a Claim that passes none).
	Lease time.Duration
	// Now is the clock; tests inject one to move past leases and expiries.
	Now func() time.Time
}

// WithDefaults returns o with retention and lease in place of durations
// that are not positive, and time.Now in place of a nil clock.
func (o Options) WithDefaults(retention, lease time.Duration) Options {
	o.Retention, o.Lease = OrDefault(o.Retention, retention), OrDefault(o.Lease, lease)
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// OrDefault returns d, or def when d is not positive.
func OrDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Token returns a random lease token: 32 hex digits.
func Token() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// Clock is a settable clock that a contract suite shares with the store
// under test. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at the current second. It must not start in the
// past: DynamoDB Local's TTL reaper deletes items whose expiration lies in
// the real past, in the middle of a test.
func NewClock() *Clock { return &Clock{t: time.Now().UTC().Truncate(time.Second)} }

// Now returns the current fake time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
