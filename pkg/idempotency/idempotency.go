// Package idempotency claims idempotency keys so that a webhook delivered many
// times is enqueued once.
//
// A claim is a conditional put that succeeds only when the key is new, its
// record has expired, or its in-progress lease has run out (the condition of
// AWS Lambda Powertools' idempotency utility, with Powertools-compatible
// attribute names). Each claim carries a random lease token; Complete and
// Release are conditional on it, so an invocation whose lease was taken over
// can never overwrite the newer claim.
//
// Stores are safe for concurrent use.
package idempotency

import (
	"errors"
	"fmt"
	"time"

	"github.com/hookpack/hookpack/pkg/internal/lease"
)

// Status is the state of a claimed key.
type Status string

// Statuses, spelled as Powertools spells them.
const (
	StatusInProgress Status = "INPROGRESS"
	StatusCompleted  Status = "COMPLETED"
)

// Defaults. Retention must outlast every sender's retry horizon (Stripe
// retries for 3 days, Svix about 5); Powertools' 1 hour is far too short.
const (
	DefaultRetention = 7 * 24 * time.Hour
	DefaultLease     = 30 * time.Second
)

// Sentinel errors.
var (
	// ErrDuplicate: the key was completed within the retention window; the
	// delivery is a duplicate of an event already queued.
	ErrDuplicate = errors.New("already processed")
	// ErrInFlight: another delivery holds a live lease on the key.
	ErrInFlight = errors.New("in flight")
	// ErrLeaseLost: the caller's lease token no longer owns the record
	// (it expired and was taken over, or the record is gone).
	ErrLeaseLost = errors.New("lease lost")
	// ErrPayloadMismatch: the key is taken (completed or in flight) by a
	// claim whose validation digest differs from the caller's: the same id
	// was reused for a different payload. Like Stripe's idempotency keys,
	// that is an error, never a silent duplicate.
	ErrPayloadMismatch = errors.New("id reused with a different payload")
	// ErrNotFound: no record of the key (never claimed, released, or
	// deleted by the table's TTL).
	ErrNotFound = errors.New("not found")
)

// Claim is a held lease on a key.
type Claim struct {
	Key   string
	Token string
	// LeaseExpires is when another delivery may take the key over.
	LeaseExpires time.Time
}

// Record is the stored state of a key, returned with ErrDuplicate,
// ErrInFlight and ErrPayloadMismatch through *ConflictError.
type Record struct {
	Key          string
	Status       Status
	Expires      time.Time
	LeaseExpires time.Time
	Validation   string
}

// ConflictError reports why a claim failed and what record is in the way.
// It wraps ErrPayloadMismatch, ErrDuplicate or ErrInFlight.
type ConflictError struct {
	Record Record
	err    error
}

func (e *ConflictError) Error() string { return fmt.Sprintf("claim %s: %v", e.Record.Key, e.err) }
func (e *ConflictError) Unwrap() error { return e.err }

// conflict classifies the record that made a conditional claim fail, for a
// claim made with validation. Digests are compared only when both sides
// have one, so records written without a digest stay plain duplicates.
func conflict(r Record, validation string) error {
	if r.Validation != "" && validation != "" && r.Validation != validation {
		return &ConflictError{Record: r, err: ErrPayloadMismatch}
	}
	if r.Status == StatusCompleted {
		return &ConflictError{Record: r, err: ErrDuplicate}
	}
	return &ConflictError{Record: r, err: ErrInFlight}
}

// Options configure a store: Retention, Lease and the clock. Zero values
// take DefaultRetention, DefaultLease and time.Now.
type Options = lease.Options
