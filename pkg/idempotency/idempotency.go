// Package idempotency records the idempotency keys of queued events so that
// a webhook delivered many times is answered duplicate once it is queued.
//
// The ingest reads a key first (Check: one strongly consistent GetItem),
// sends the event when the key is free, and only then records it
// (Complete: one conditional PutItem of a COMPLETED record). Concurrent
// deliveries of one event both send it: the queue's deduplication id (SQS
// FIFO, 5 minutes) and the worker's effect ledger absorb the copies, so no
// record is needed while an event is in flight. Records keep AWS Lambda
// Powertools' attribute names; INPROGRESS records, written by the lease
// claims of earlier versions, count as free.
//
// Stores are safe for concurrent use.
package idempotency

import (
	"errors"
	"fmt"
	"time"

	"github.com/hookpack/hookpack/pkg/internal/epoch"
	"github.com/hookpack/hookpack/pkg/internal/lease"
)

// Status is the state of a key's record.
type Status string

// Statuses, spelled as Powertools spells them. Stores write only
// StatusCompleted; StatusInProgress is read on records earlier versions
// wrote.
const (
	StatusInProgress Status = "INPROGRESS"
	StatusCompleted  Status = "COMPLETED"
)

// DefaultRetention must outlast every sender's retry horizon (Stripe
// retries for 3 days, Svix about 5); Powertools' 1 hour is far too short.
const DefaultRetention = 7 * 24 * time.Hour

// Sentinel errors.
var (
	// ErrDuplicate: the key was completed within the retention window; the
	// delivery is a duplicate of an event already queued.
	ErrDuplicate = errors.New("already processed")
	// ErrPayloadMismatch: the key was completed with a validation digest
	// that differs from the caller's: the same id was reused for a
	// different payload. Like Stripe's idempotency keys, that is an error,
	// never a silent duplicate.
	ErrPayloadMismatch = errors.New("id reused with a different payload")
	// ErrNotFound: no record of the key (never completed, or deleted by the
	// table's TTL).
	ErrNotFound = errors.New("not found")
)

// Record is the stored state of a key, returned with ErrDuplicate and
// ErrPayloadMismatch through *ConflictError.
type Record struct {
	Key     string
	Status  Status
	Expires time.Time
	// LeaseExpires is set only on the INPROGRESS records of earlier
	// versions.
	LeaseExpires time.Time
	Validation   string
}

// ConflictError reports why a key is not free and what record holds it.
// It wraps ErrPayloadMismatch or ErrDuplicate.
type ConflictError struct {
	Record Record
	err    error
}

func (e *ConflictError) Error() string { return fmt.Sprintf("key %s: %v", e.Record.Key, e.err) }
func (e *ConflictError) Unwrap() error { return e.err }

// free reports whether r leaves its key free at now: past its expiration
// (compared in the stored epoch seconds, as the DynamoDB condition does),
// or not completed.
func free(r Record, now time.Time) bool {
	return epoch.Seconds(r.Expires) < epoch.Seconds(now) || r.Status != StatusCompleted
}

// conflict classifies the record that holds a key against a caller's
// validation digest. Digests are compared only when both sides have one,
// so records written without a digest stay plain duplicates.
func conflict(r Record, validation string) error {
	if r.Validation != "" && validation != "" && r.Validation != validation {
		return &ConflictError{Record: r, err: ErrPayloadMismatch}
	}
	return &ConflictError{Record: r, err: ErrDuplicate}
}

// Options configure a store: Retention and the clock. Zero values take
// DefaultRetention and time.Now; Lease is not used.
type Options = lease.Options
