package idempotency

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/internal/epoch"
	"github.com/hookpack/hookpack/pkg/internal/lease"
)

// Memory is an in-process Store with the same semantics as DynamoDB. It
// backs unit tests and benchmarks and passes the same contract suite.
type Memory struct {
	opts    Options
	mu      sync.Mutex
	records map[string]memRecord
}

type memRecord struct {
	Record
	token string
}

// NewMemory returns an empty in-memory store.
func NewMemory(opts Options) *Memory {
	return &Memory{opts: opts.WithDefaults(DefaultRetention, DefaultLease), records: map[string]memRecord{}}
}

// Claim behaves like (*DynamoDB).Claim.
func (m *Memory) Claim(_ context.Context, key, validation string) (Claim, error) {
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.records[key]; ok {
		// Compare in the stored units, exactly as the DynamoDB condition does.
		expired := epoch.Seconds(r.Expires) < epoch.Seconds(now)
		leaseOver := r.Status == StatusInProgress && !r.LeaseExpires.IsZero() && epoch.Millis(r.LeaseExpires) < epoch.Millis(now)
		if !expired && !leaseOver {
			return Claim{}, conflict(r.Record, validation)
		}
	}
	c := Claim{Key: key, Token: lease.Token(), LeaseExpires: now.Add(m.opts.Lease)}
	m.records[key] = memRecord{
		Record: Record{Key: key, Status: StatusInProgress, Expires: now.Add(m.opts.Retention), LeaseExpires: c.LeaseExpires, Validation: validation},
		token:  c.Token,
	}
	return c, nil
}

// Complete behaves like (*DynamoDB).Complete.
func (m *Memory) Complete(_ context.Context, c Claim) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.records[c.Key]; ok && r.token == c.Token && r.Status == StatusCompleted {
		return nil // the completion already landed
	}
	r, err := m.owned("complete", c)
	if err != nil {
		return err
	}
	r.Status = StatusCompleted
	r.Expires = m.opts.Now().Add(m.opts.Retention)
	r.LeaseExpires = time.Time{}
	m.records[c.Key] = r
	return nil
}

// Release behaves like (*DynamoDB).Release.
func (m *Memory) Release(_ context.Context, c Claim) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.owned("release", c); err != nil {
		return err
	}
	delete(m.records, c.Key)
	return nil
}

// Record behaves like (*DynamoDB).Record.
func (m *Memory) Record(_ context.Context, key string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[key]
	if !ok {
		return Record{}, fmt.Errorf("read %s: %w", key, ErrNotFound)
	}
	return r.Record, nil
}

// owned returns the record c's lease still owns, or the error
// (*DynamoDB).Complete and Release report. The caller holds m.mu.
func (m *Memory) owned(op string, c Claim) (memRecord, error) {
	r, ok := m.records[c.Key]
	if !ok || r.token != c.Token || r.Status != StatusInProgress {
		return r, fmt.Errorf("%s %s: %w", op, c.Key, ErrLeaseLost)
	}
	return r, nil
}
