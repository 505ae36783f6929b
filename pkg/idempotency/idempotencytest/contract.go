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
	Claim(ctx context.Context, key, validation string) (idempotency.Claim, error)
	Complete(ctx context.Context, c idempotency.Claim) error
	Release(ctx context.Context, c idempotency.Claim) error
	Record(ctx context.Context, key string) (idempotency.Record, error)
}

// Clock is the settable clock the test shares with the store.
type Clock = lease.Clock

// Lease and Retention are the options every store under test must be built
// with.
const (
	Lease     = 30 * time.Second
	Retention = time.Hour
)

// Quirks are known defects of a backend that the suite must not report as
// store bugs.
type Quirks struct {
	// NonAtomicConditionalWrites: the backend checks a conditional write's
	// condition and then writes without a lock, so concurrent claims can
	// both win. moto does this; DynamoDB (and DynamoDB Local) do not, which
	// is why the concurrency case always runs against DynamoDB Local.
	NonAtomicConditionalWrites bool
}

// Run runs the contract. newStore returns a store using clock.Now, Lease and
// Retention, on storage not shared with other calls.
func Run(t *testing.T, newStore func(t *testing.T, clock *Clock) Store, q Quirks) {
	ctx := context.Background()
	// setup returns a fresh clock, a store on it and a key of its own.
	setup := func(t *testing.T) (*Clock, Store, string) {
		clock := lease.NewClock()
		return clock, newStore(t, clock), fmt.Sprintf("tenant#provider#%s-%d", t.Name(), time.Now().UnixNano())
	}

	t.Run("FirstClaimWins", func(t *testing.T) {
		clock, s, k := setup(t)
		c, err := s.Claim(ctx, k, "v1")
		if err != nil {
			t.Fatalf("Claim() = %v", err)
		}
		if c.Token == "" || !c.LeaseExpires.Equal(clock.Now().Add(Lease)) {
			t.Errorf("Claim() = %+v, want a token and lease until now+%s", c, Lease)
		}
		_, err = s.Claim(ctx, k, "v1")
		var ce *idempotency.ConflictError
		if !errors.Is(err, idempotency.ErrInFlight) || !errors.As(err, &ce) {
			t.Fatalf("second Claim() = %v, want ErrInFlight conflict", err)
		}
		if ce.Record.Status != idempotency.StatusInProgress || ce.Record.Validation != "v1" {
			t.Errorf("conflict record = %+v", ce.Record)
		}
		if got := idempotency.RetryAfter(ce.Record, clock.Now()); got != Lease {
			t.Errorf("RetryAfter = %s, want %s", got, Lease)
		}
	})

	t.Run("CompletedIsDuplicateUntilRetentionEnds", func(t *testing.T) {
		clock, s, k := setup(t)
		c := mustClaim(t, s, k)
		if err := s.Complete(ctx, c); err != nil {
			t.Fatalf("Complete() = %v", err)
		}
		clock.Advance(Retention - time.Second)
		if _, err := s.Claim(ctx, k, ""); !errors.Is(err, idempotency.ErrDuplicate) {
			t.Fatalf("Claim() within retention = %v, want ErrDuplicate", err)
		}
		clock.Advance(2 * time.Second)
		if _, err := s.Claim(ctx, k, ""); err != nil {
			t.Fatalf("Claim() after retention = %v, want success", err)
		}
	})

	t.Run("RecordShowsEachState", func(t *testing.T) {
		clock, s, k := setup(t)
		if _, err := s.Record(ctx, k); !errors.Is(err, idempotency.ErrNotFound) {
			t.Fatalf("Record() of a new key = %v, want ErrNotFound", err)
		}
		c, err := s.Claim(ctx, k, "digest-a")
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Record(ctx, k)
		if err != nil || r.Key != k || r.Status != idempotency.StatusInProgress || r.Validation != "digest-a" ||
			epoch.Millis(r.LeaseExpires) != epoch.Millis(c.LeaseExpires) || epoch.Seconds(r.Expires) != epoch.Seconds(clock.Now().Add(Retention)) {
			t.Fatalf("Record() after Claim = %+v, %v; want INPROGRESS, digest-a, lease until %s", r, err, c.LeaseExpires)
		}
		clock.Advance(time.Minute)
		if err := s.Complete(ctx, c); err != nil {
			t.Fatal(err)
		}
		r, err = s.Record(ctx, k)
		if err != nil || r.Status != idempotency.StatusCompleted || !r.LeaseExpires.IsZero() || epoch.Seconds(r.Expires) != epoch.Seconds(clock.Now().Add(Retention)) {
			t.Fatalf("Record() after Complete = %+v, %v; want COMPLETED, no lease, expiring a retention from now", r, err)
		}
	})

	t.Run("CompleteRestartsRetention", func(t *testing.T) {
		clock, s, k := setup(t)
		c := mustClaim(t, s, k)
		clock.Advance(Lease / 2)
		if err := s.Complete(ctx, c); err != nil {
			t.Fatal(err)
		}
		clock.Advance(Retention - Lease/4)
		if _, err := s.Claim(ctx, k, ""); !errors.Is(err, idempotency.ErrDuplicate) {
			t.Fatalf("Claim() = %v, want ErrDuplicate (retention counts from completion)", err)
		}
	})

	t.Run("ReusedIDWithAnotherPayloadIsAMismatch", func(t *testing.T) {
		_, s, k := setup(t)
		c, err := s.Claim(ctx, k, "digest-a")
		if err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			name       string
			validation string
			want       error
		}{
			{"in flight, other payload", "digest-b", idempotency.ErrPayloadMismatch},
			{"in flight, same payload", "digest-a", idempotency.ErrInFlight},
			{"in flight, no digest", "", idempotency.ErrInFlight},
			{"complete", "", nil},
			{"completed, other payload", "digest-b", idempotency.ErrPayloadMismatch},
			{"completed, same payload", "digest-a", idempotency.ErrDuplicate},
		}
		for _, st := range steps {
			if st.name == "complete" {
				if err := s.Complete(ctx, c); err != nil {
					t.Fatal(err)
				}
				continue
			}
			_, err := s.Claim(ctx, k, st.validation)
			var ce *idempotency.ConflictError
			if !errors.Is(err, st.want) || !errors.As(err, &ce) {
				t.Fatalf("%s: Claim(%q) = %v, want %v", st.name, st.validation, err, st.want)
			}
			if ce.Record.Validation != "digest-a" {
				t.Errorf("%s: conflict record validation = %q, want the stored digest-a", st.name, ce.Record.Validation)
			}
			if errors.Is(err, idempotency.ErrPayloadMismatch) && (errors.Is(err, idempotency.ErrDuplicate) || errors.Is(err, idempotency.ErrInFlight)) {
				t.Errorf("%s: a mismatch must not also read as a duplicate: %v", st.name, err)
			}
		}
	})

	t.Run("ExpiredLeaseIsTakenOver", func(t *testing.T) {
		clock, s, k := setup(t)
		dead := mustClaim(t, s, k) // its Lambda died mid-flight
		clock.Advance(Lease - time.Second)
		if _, err := s.Claim(ctx, k, ""); !errors.Is(err, idempotency.ErrInFlight) {
			t.Fatalf("Claim() inside lease = %v, want ErrInFlight", err)
		}
		clock.Advance(2 * time.Second)
		next, err := s.Claim(ctx, k, "")
		if err != nil {
			t.Fatalf("Claim() after lease = %v, want takeover", err)
		}
		if next.Token == dead.Token {
			t.Fatal("takeover reused the dead claim's token")
		}
		if err := s.Complete(ctx, dead); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Errorf("stale Complete() = %v, want ErrLeaseLost", err)
		}
		if err := s.Release(ctx, dead); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Errorf("stale Release() = %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, next); err != nil {
			t.Errorf("Complete() by the new owner = %v", err)
		}
	})

	t.Run("ReleaseLetsTheRetryIn", func(t *testing.T) {
		_, s, k := setup(t)
		c := mustClaim(t, s, k)
		if err := s.Release(ctx, idempotency.Claim{Key: k, Token: "not-mine"}); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Errorf("Release(wrong token) = %v, want ErrLeaseLost", err)
		}
		if err := s.Release(ctx, c); err != nil {
			t.Fatalf("Release() = %v", err)
		}
		if _, err := s.Claim(ctx, k, ""); err != nil {
			t.Fatalf("Claim() after release = %v", err)
		}
	})

	t.Run("CompletedCannotBeReleased", func(t *testing.T) {
		clock, s, k := setup(t)
		c := mustClaim(t, s, k)
		if err := s.Complete(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, c); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Errorf("Release(completed) = %v, want ErrLeaseLost", err)
		}
		clock.Advance(Lease * 10) // a completed record has no lease to take over
		if _, err := s.Claim(ctx, k, ""); !errors.Is(err, idempotency.ErrDuplicate) {
			t.Errorf("Claim() = %v, want ErrDuplicate", err)
		}
	})

	// A completion whose response was lost is sent again by the SDK's
	// retry: it fails the condition, yet the record is done by this lease.
	// Only that lease's token may complete a done record again.
	t.Run("CompleteAgainByItsLeaseSucceeds", func(t *testing.T) {
		tests := []struct {
			name string
			// complete returns the claim that completes the record and the
			// one that completes it again.
			complete func(t *testing.T, clock *Clock, s Store, k string) (first, again idempotency.Claim)
			want     error
		}{
			{"same lease", func(t *testing.T, _ *Clock, s Store, k string) (idempotency.Claim, idempotency.Claim) {
				c := mustClaim(t, s, k)
				return c, c
			}, nil},
			{"another token", func(t *testing.T, _ *Clock, s Store, k string) (idempotency.Claim, idempotency.Claim) {
				c := mustClaim(t, s, k)
				return c, idempotency.Claim{Key: k, Token: "not-mine", LeaseExpires: c.LeaseExpires}
			}, idempotency.ErrLeaseLost},
			{"a stale lease, taken over by the one that completed", func(t *testing.T, clock *Clock, s Store, k string) (idempotency.Claim, idempotency.Claim) {
				stale := mustClaim(t, s, k)
				clock.Advance(Lease + time.Second)
				return mustClaim(t, s, k), stale
			}, idempotency.ErrLeaseLost},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				clock, s, k := setup(t)
				first, again := tt.complete(t, clock, s, k)
				if err := s.Complete(ctx, first); err != nil {
					t.Fatalf("Complete() = %v", err)
				}
				if err := s.Complete(ctx, again); !errors.Is(err, tt.want) {
					t.Errorf("Complete() again = %v, want %v", err, tt.want)
				}
				if _, err := s.Claim(ctx, k, ""); !errors.Is(err, idempotency.ErrDuplicate) {
					t.Errorf("Claim() after the second Complete() = %v, want ErrDuplicate", err)
				}
			})
		}
	})

	t.Run("ConcurrentClaimsHaveOneWinner", func(t *testing.T) {
		if q.NonAtomicConditionalWrites {
			t.Skip("backend quirk: conditional writes are not atomic under concurrency (see Quirks); Memory and DynamoDB Local run this case")
		}
		_, s, k := setup(t)
		const n = 50
		var wins, inflight atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				<-start
				_, err := s.Claim(ctx, k, "")
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, idempotency.ErrInFlight):
					inflight.Add(1)
				default:
					errs <- err
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("Claim() = %v", err)
		}
		if wins.Load() != 1 || inflight.Load() != n-1 {
			t.Errorf("wins = %d, in-flight = %d; want 1 and %d", wins.Load(), inflight.Load(), n-1)
		}
	})
}

func mustClaim(t *testing.T, s Store, key string) idempotency.Claim {
	t.Helper()
	c, err := s.Claim(context.Background(), key, "")
	if err != nil {
		t.Fatalf("Claim(%q) = %v", key, err)
	}
	return c
}
