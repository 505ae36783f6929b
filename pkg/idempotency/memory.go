package idempotency

import (
	"context"
	"fmt"
	"sync"
)

// Memory is an in-process Store with the same semantics as DynamoDB. It
// backs unit tests and benchmarks and passes the same contract suite.
type Memory struct {
	opts    Options
	mu      sync.Mutex
	records map[string]Record
}

// NewMemory returns an empty in-memory store.
func NewMemory(opts Options) *Memory {
	return &Memory{opts: opts.WithDefaults(DefaultRetention, 0), records: map[string]Record{}}
}

// Check behaves like (*DynamoDB).Check.
func (m *Memory) Check(_ context.Context, key, validation string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.records[key]; ok && !free(r, m.opts.Now()) {
		return conflict(r, validation)
	}
	return nil
}

// Complete behaves like (*DynamoDB).Complete.
func (m *Memory) Complete(_ context.Context, key, validation string) error {
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.records[key]; ok && !free(r, now) {
		return completed(r, validation)
	}
	m.records[key] = Record{Key: key, Status: StatusCompleted, Expires: now.Add(m.opts.Retention), Validation: validation}
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
	return r, nil
}
