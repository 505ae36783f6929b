package ledger

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/epoch"
)

// Memory is an in-process ledger with the same semantics as DynamoDB,
// including the order in which a fenced write's conditions are reported. It
// backs unit tests, benchmarks and the example, and passes the same
// contract suite.
type Memory struct {
	opts Options

	mu       sync.Mutex
	effects  map[string]memEffect
	fences   map[string]int64
	entities map[string]Entity
}

type memEffect struct {
	Record
	token string
}

// NewMemory returns an empty in-memory ledger.
func NewMemory(opts Options) *Memory {
	return &Memory{
		opts:     opts.withDefaults(),
		effects:  map[string]memEffect{},
		fences:   map[string]int64{},
		entities: map[string]Entity{},
	}
}

// Take behaves like (*DynamoDB).Take.
func (m *Memory) Take(_ context.Context, tenantID, conversation string) (Fence, error) {
	f := Fence{Tenant: tenantID, Conversation: conversation}
	if err := validFence(f); err != nil {
		return Fence{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pk := conversationPK(tenantID, conversation)
	m.fences[pk]++
	f.Token = m.fences[pk]
	return f, nil
}

// fenced reports whether f is no longer the conversation's current token.
// The caller holds m.mu.
func (m *Memory) fenced(f Fence) bool {
	cur, ok := m.fences[conversationPK(f.Tenant, f.Conversation)]
	return !ok || cur != f.Token
}

// Claim behaves like (*DynamoDB).Claim.
func (m *Memory) Claim(_ context.Context, f Fence, k Key, lease time.Duration) (Lease, error) {
	if err := checkClaim(f, k); err != nil {
		return Lease{}, err
	}
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fenced(f) {
		return Lease{}, fmt.Errorf("claim %s: %w", k, ErrFenced)
	}
	pk := effectPK(k)
	if r, ok := m.effects[pk]; ok {
		// Compare in the stored units, exactly as the DynamoDB condition does.
		expired := epoch.Seconds(r.Expires) < epoch.Seconds(now)
		leaseOver := r.Status == StatusInProgress && epoch.Millis(r.LeaseExpires) < epoch.Millis(now)
		if !expired && !leaseOver && r.Status != StatusFailed {
			return Lease{}, conflict(r.Record)
		}
	}
	l := Lease{Key: k, Fence: f, Token: newToken(), Expires: now.Add(m.opts.lease(lease))}
	m.effects[pk] = memEffect{
		Record: Record{
			Key: k, Status: StatusInProgress, Fence: f.Token,
			// Stored in DynamoDB's units, so records read back alike.
			LeaseExpires: epoch.FromMillis(epoch.Millis(l.Expires)),
			Expires:      epoch.FromSeconds(epoch.Seconds(now.Add(m.opts.Retention))),
		},
		token: l.Token,
	}
	return l, nil
}

// Complete behaves like (*DynamoDB).Complete.
func (m *Memory) Complete(_ context.Context, l Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fenced(l.Fence) {
		return fmt.Errorf("complete %s: %w", l.Key, ErrFenced)
	}
	pk := effectPK(l.Key)
	r, ok := m.effects[pk]
	if !ok || r.token != l.Token || r.Status != StatusInProgress {
		return fmt.Errorf("complete %s: %w", l.Key, ErrLeaseLost)
	}
	r.Status, r.Reason = StatusCompleted, ""
	r.Expires = epoch.FromSeconds(epoch.Seconds(m.opts.Now().Add(m.opts.Retention)))
	r.LeaseExpires = time.Time{}
	m.effects[pk] = r
	return nil
}

// Fail behaves like (*DynamoDB).Fail.
func (m *Memory) Fail(_ context.Context, l Lease, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	pk := effectPK(l.Key)
	r, ok := m.effects[pk]
	if !ok || r.token != l.Token || r.Status != StatusInProgress {
		return fmt.Errorf("fail %s: %w", l.Key, ErrLeaseLost)
	}
	r.Status, r.Reason = StatusFailed, reasonText(reason)
	r.LeaseExpires = time.Time{}
	m.effects[pk] = r
	return nil
}

// Apply behaves like (*DynamoDB).Apply.
func (m *Memory) Apply(_ context.Context, f Fence, u Update) error {
	if err := validFence(f); err != nil {
		return err
	}
	if err := validName("entity", u.Entity); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fenced(f) {
		return fmt.Errorf("apply %s of %s: %w", u.Entity, f.Tenant, ErrFenced)
	}
	pk := entityPK(f.Tenant, u.Entity)
	if e, ok := m.entities[pk]; ok && e.Version >= u.Version {
		return fmt.Errorf("apply %s of %s version %d: %w", u.Entity, f.Tenant, u.Version, ErrStale)
	}
	var data []byte
	if len(u.Data) > 0 {
		data = bytes.Clone(u.Data)
	}
	m.entities[pk] = Entity{
		Tenant: f.Tenant, ID: u.Entity, Version: u.Version, Data: data, Fence: f.Token,
		UpdatedAt: epoch.FromMillis(epoch.Millis(m.opts.Now())),
	}
	return nil
}

// Entity behaves like (*DynamoDB).Entity.
func (m *Memory) Entity(_ context.Context, tenantID, id string) (Entity, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entities[entityPK(tenantID, id)]
	if !ok {
		return Entity{}, fmt.Errorf("entity %s of %s: %w", id, tenantID, ErrNotFound)
	}
	e.Data = bytes.Clone(e.Data)
	return e, nil
}

// Record behaves like (*DynamoDB).Record.
func (m *Memory) Record(_ context.Context, k Key) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.effects[effectPK(k)]
	if !ok {
		return Record{}, fmt.Errorf("record %s: %w", k, ErrNotFound)
	}
	return r.Record, nil
}
