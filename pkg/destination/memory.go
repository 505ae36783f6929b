package destination

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"
)

// Memory is an in-process store with the semantics of DynamoDB: each
// method's condition is checked on the state Memory holds, as DynamoDB
// checks it on the stored item. It backs unit tests, the simulation and
// make run's single-process pollers, and passes the contract suite
// (destinationtest). It is safe for concurrent use.
type Memory struct {
	mu      sync.Mutex
	tenants map[string]States
}

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{tenants: map[string]States{}} }

// States behaves like (*DynamoDB).States.
func (m *Memory) States(_ context.Context, tenantID string) (States, error) {
	if err := checkTenant(tenantID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.tenants[tenantID]), nil
}

// Pause behaves like (*DynamoDB).Pause.
func (m *Memory) Pause(_ context.Context, tenantID, name, reason string, now time.Time) (State, error) {
	if err := checkPause(tenantID, name, reason); err != nil {
		return State{}, err
	}
	return m.change(tenantID, name, func(s *State) error {
		if s.IsPaused() {
			return fmt.Errorf("pause %s/%s: %w", tenantID, name, ErrAlreadyPaused)
		}
		s.Paused = Pause{Since: ms(now), Reason: reason, By: Operator}
		return nil
	})
}

// Resume behaves like (*DynamoDB).Resume.
func (m *Memory) Resume(_ context.Context, tenantID, name string) (Pause, error) {
	if err := check(tenantID, name); err != nil {
		return Pause{}, err
	}
	var ended Pause
	_, err := m.change(tenantID, name, func(s *State) error {
		if !s.IsPaused() {
			return fmt.Errorf("resume %s/%s: %w", tenantID, name, ErrNotPaused)
		}
		ended, *s = s.Paused, State{}
		return nil
	})
	return ended, err
}

// Failed behaves like (*DynamoDB).Failed.
func (m *Memory) Failed(_ context.Context, tenantID, name, reason string, now time.Time, after time.Duration, seen State) (State, error) {
	if err := check(tenantID, name); err != nil {
		return State{}, err
	}
	switch planFailed(seen, now, after) {
	case stepStart:
		return m.change(tenantID, name, func(s *State) error {
			if !s.IsFailing() {
				s.Failing = Failing{Since: ms(now), Reason: cut(reason)}
			}
			return nil
		})
	case stepPause:
		return m.change(tenantID, name, func(s *State) error {
			if !s.IsPaused() && s.Failing.Since.Equal(ms(seen.Failing.Since)) {
				s.Paused = Pause{Since: ms(now), Reason: AutoReason(seen.Failing, now, reason), By: Auto}
			}
			return nil
		})
	}
	return seen, nil
}

// Recovered behaves like (*DynamoDB).Recovered.
func (m *Memory) Recovered(_ context.Context, tenantID, name string, now time.Time, seen State) (State, error) {
	if err := check(tenantID, name); err != nil {
		return State{}, err
	}
	if !seen.IsFailing() {
		return seen, nil
	}
	return m.change(tenantID, name, func(s *State) error {
		if s.IsFailing() && !s.Failing.Since.After(now) {
			s.Failing = Failing{}
		}
		return nil
	})
}

// Forget behaves like (*DynamoDB).Forget.
func (m *Memory) Forget(_ context.Context, tenantID string) error {
	if err := checkTenant(tenantID); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tenants, tenantID)
	return nil
}

// change applies f to the destination's state under the lock and returns
// the state after it (the one before when f fails).
func (m *Memory) change(tenantID, name string, f func(*State) error) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.tenants[tenantID][name]
	if err := f(&s); err != nil {
		return m.tenants[tenantID][name], err
	}
	if m.tenants[tenantID] == nil {
		m.tenants[tenantID] = States{}
	}
	if s == (State{}) {
		delete(m.tenants[tenantID], name)
	} else {
		m.tenants[tenantID][name] = s
	}
	return s, nil
}
