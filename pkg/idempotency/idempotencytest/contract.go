// Package idempotencytest is the contract suite every idempotency store must
// pass: the in-memory store, and the DynamoDB store against both DynamoDB
// Local and moto.
package idempotencytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/internal/epoch"
	"github.com/hookpack/hookpack/pkg/internal/lease"
)

// Store is the behaviour under test.
type Store interface {
	Check(ctx context.Context, key, validation string) error
	Complete(ctx context.Context, key, validation string) error
	Record(ctx context.Context, key string) (idempotency.Record, error)
}

// Clock is the settable clock the test shares with the store.
type Clock = lease.Clock

// Retention is the option every store under test must be built with.
const Retention = time.Hour

// Quirks are known defects of a backend that the suite must not report as
// store bugs.
type Quirks struct {
	// NonAtomicConditionalWrites: the backend checks a conditional write's
	// condition and then writes without a lock, so concurrent completions
	// can both win. moto does this; DynamoDB (and DynamoDB Local) do not,
	// which is why the concurrency case always runs against DynamoDB Local.
	NonAtomicConditionalWrites bool
}

// Run runs the contract. newStore returns a store using clock.Now and
// Retention, on storage not shared with other calls.
func Run(t *testing.T, newStore func(t *testing.T, clock *Clock) Store, q Quirks) {
	ctx := context.Background()
	// setup returns a fresh clock, a store on it and a key of its own.
	setup := func(t *testing.T) (*Clock, Store, string) {
		clock := lease.NewClock()
		return clock, newStore(t, clock), fmt.Sprintf("tenant#provider#%s-%d", t.Name(), time.Now().UnixNano())
	}

	t.Run("NewKeyIsFreeUntilCompleted", func(t *testing.T) {
		_, s, k := setup(t)
		for range 2 { // a check writes nothing: the key stays free
			if err := s.Check(ctx, k, "v1"); err != nil {
				t.Fatalf("Check() of a new key = %v, want nil", err)
			}
		}
		if _, err := s.Record(ctx, k); !errors.Is(err, idempotency.ErrNotFound) {
			t.Fatalf("Record() after Check() = %v, want ErrNotFound", err)
		}
		if err := s.Complete(ctx, k, "v1"); err != nil {
			t.Fatalf("Complete() = %v", err)
		}
		err := s.Check(ctx, k, "v1")
		var ce *idempotency.ConflictError
		if !errors.Is(err, idempotency.ErrDuplicate) || !errors.As(err, &ce) || ce.Record.Validation != "v1" {
			t.Fatalf("Check() after Complete() = %v, want an ErrDuplicate conflict holding v1", err)
		}
	})

	t.Run("CompletedIsDuplicateUntilRetentionEnds", func(t *testing.T) {
		clock, s, k := setup(t)
		if err := s.Complete(ctx, k, ""); err != nil {
			t.Fatalf("Complete() = %v", err)
		}
		clock.Advance(Retention - time.Second)
		if err := s.Check(ctx, k, ""); !errors.Is(err, idempotency.ErrDuplicate) {
			t.Fatalf("Check() within retention = %v, want ErrDuplicate", err)
		}
		clock.Advance(2 * time.Second)
		if err := s.Check(ctx, k, "other"); err != nil {
			t.Fatalf("Check() after retention = %v, want free", err)
		}
		// An expired record the TTL has not deleted yet is written over.
		if err := s.Complete(ctx, k, "other"); err != nil {
			t.Fatalf("Complete() after retention = %v, want success", err)
		}
		if r, err := s.Record(ctx, k); err != nil || r.Validation != "other" || epoch.Seconds(r.Expires) != epoch.Seconds(clock.Now().Add(Retention)) {
			t.Fatalf("Record() = %+v, %v; want the new digest, expiring a retention from now", r, err)
		}
	})

	t.Run("RecordShowsTheCompletion", func(t *testing.T) {
		clock, s, k := setup(t)
		clock.Advance(time.Minute)
		if err := s.Complete(ctx, k, "digest-a"); err != nil {
			t.Fatal(err)
		}
		r, err := s.Record(ctx, k)
		if err != nil || r.Key != k || r.Status != idempotency.StatusCompleted || r.Validation != "digest-a" || !r.LeaseExpires.IsZero() ||
			epoch.Seconds(r.Expires) != epoch.Seconds(clock.Now().Add(Retention)) {
			t.Fatalf("Record() after Complete = %+v, %v; want COMPLETED, digest-a, no lease, expiring a retention from now", r, err)
		}
	})

	t.Run("ReusedIDWithAnotherPayloadIsAMismatch", func(t *testing.T) {
		_, s, k := setup(t)
		if err := s.Complete(ctx, k, "digest-a"); err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			name       string
			call       func(validation string) error
			validation string
			want       error
		}{
			{"check, other payload", func(v string) error { return s.Check(ctx, k, v) }, "digest-b", idempotency.ErrPayloadMismatch},
			{"check, same payload", func(v string) error { return s.Check(ctx, k, v) }, "digest-a", idempotency.ErrDuplicate},
			{"check, no digest", func(v string) error { return s.Check(ctx, k, v) }, "", idempotency.ErrDuplicate},
			{"complete, other payload", func(v string) error { return s.Complete(ctx, k, v) }, "digest-b", idempotency.ErrPayloadMismatch},
		}
		for _, st := range steps {
			err := st.call(st.validation)
			var ce *idempotency.ConflictError
			if !errors.Is(err, st.want) || !errors.As(err, &ce) {
				t.Fatalf("%s: %q = %v, want %v", st.name, st.validation, err, st.want)
			}
			if ce.Record.Validation != "digest-a" {
				t.Errorf("%s: conflict record validation = %q, want the stored digest-a", st.name, ce.Record.Validation)
			}
			if errors.Is(err, idempotency.ErrPayloadMismatch) && errors.Is(err, idempotency.ErrDuplicate) {
				t.Errorf("%s: a mismatch must not also read as a duplicate: %v", st.name, err)
			}
		}
		if r, err := s.Record(ctx, k); err != nil || r.Validation != "digest-a" {
			t.Errorf("Record() = %+v, %v; the mismatching completion must leave digest-a", r, err)
		}
	})

	// A completion whose response was lost is sent again by the SDK's
	// retry, and a concurrent delivery of the same event completes it too:
	// both find the record done with their digest, which is success.
	t.Run("CompleteAgainWithTheSamePayloadSucceeds", func(t *testing.T) {
		clock, s, k := setup(t)
		if err := s.Complete(ctx, k, "digest-a"); err != nil {
			t.Fatal(err)
		}
		first, _ := s.Record(ctx, k)
		clock.Advance(time.Minute)
		for _, v := range []string{"digest-a", ""} {
			if err := s.Complete(ctx, k, v); err != nil {
				t.Errorf("Complete(%q) again = %v, want nil", v, err)
			}
		}
		if r, _ := s.Record(ctx, k); !r.Expires.Equal(first.Expires) {
			t.Errorf("a second Complete() moved the expiry from %s to %s: the window counts from the first", first.Expires, r.Expires)
		}
	})

	t.Run("ConcurrentCompletionsHaveOneWinner", func(t *testing.T) {
		if q.NonAtomicConditionalWrites {
			t.Skip("backend quirk: conditional writes are not atomic under concurrency (see Quirks); Memory and DynamoDB Local run this case")
		}
		_, s, k := setup(t)
		const n = 50
		var ok, mismatch atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				<-start
				err := s.Complete(ctx, k, fmt.Sprint("digest-", i%2)) // two payloads under one id
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, idempotency.ErrPayloadMismatch):
					mismatch.Add(1)
				default:
					errs <- err
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("Complete() = %v", err)
		}
		if ok.Load() != n/2 || mismatch.Load() != n/2 {
			t.Errorf("succeeded %d, mismatched %d; want %d each: one payload wins, every completion of it succeeds", ok.Load(), mismatch.Load(), n/2)
		}
	})
}
