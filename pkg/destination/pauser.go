package destination

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hookpack/hookpack/pkg/tenant"
)

// outboundReader reads a tenant's outbound configuration (tenant.SSM).
type outboundReader interface {
	Outbound(ctx context.Context, id string) (tenant.Outbound, error)
}

// pauseStore pauses and resumes destinations (DynamoDB, Memory).
type pauseStore interface {
	Pause(ctx context.Context, tenantID, name, reason string, now time.Time) (State, error)
	Resume(ctx context.Context, tenantID, name string) (Pause, error)
}

// Pauser pauses and resumes destinations for a person: scripts/destination
// (tenant.sh pause, make pause) and the operator console both go through
// it, so both check the same and say the same. It pauses only a destination
// the tenant's outbound configuration names (Known), by Operator, with a
// reason (CheckReason). Pausing a paused destination, or resuming one that
// is not, leaves it as it is and says so, without an error. It is safe for
// concurrent use when its stores are.
type Pauser struct {
	Outbound outboundReader
	States   pauseStore
	Now      func() time.Time
}

// Pause pauses the destination and returns what it did, as sentences. It
// returns an error wrapping ErrInvalid (the reason, checked before any
// call), ErrUnknownTenant (no outbound configuration), ErrUnknown, or a
// failed call's.
func (p *Pauser) Pause(ctx context.Context, tenantID, name, reason string) (string, error) {
	if err := CheckReason(reason); err != nil {
		return "", fmt.Errorf("reason: %w", err)
	}
	if err := p.known(ctx, tenantID, name); err != nil {
		return "", err
	}
	now := p.Now()
	s, err := p.States.Pause(ctx, tenantID, name, reason, now)
	switch {
	case errors.Is(err, ErrAlreadyPaused):
		return fmt.Sprintf("%s/%s was already paused, left as it is: %s", tenantID, name, s.Paused.Describe(now)), nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("paused %s/%s: %s. Its events wait on the queue, no attempt counted and none dead-lettered, until it is resumed.",
		tenantID, name, s.Paused.Describe(now)), nil
}

// Resume resumes the destination and returns what it did, as sentences.
// It returns an error wrapping ErrUnknownTenant, ErrUnknown or a failed
// call's.
func (p *Pauser) Resume(ctx context.Context, tenantID, name string) (string, error) {
	if err := p.known(ctx, tenantID, name); err != nil {
		return "", err
	}
	now := p.Now()
	paused, err := p.States.Resume(ctx, tenantID, name)
	switch {
	case errors.Is(err, ErrNotPaused):
		return fmt.Sprintf("%s/%s is not paused", tenantID, name), nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("resumed %s/%s, which was %s. Its waiting events come back within %s and are delivered in order, at its rate.",
		tenantID, name, paused.Describe(now), Poll(now.Sub(paused.Since))+DefaultCacheTTL), nil
}

// Names returns the names of the tenant's destinations, sorted (none for
// a legacy targetUrl). It returns an error wrapping ErrUnknownTenant or the
// failed read's.
func (p *Pauser) Names(ctx context.Context, tenantID string) ([]string, error) {
	out, err := p.outbound(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(out.Destinations))
	for _, d := range out.Destinations {
		names = append(names, d.Name)
	}
	return slices.Sorted(slices.Values(names)), nil
}

// known checks that the tenant has destination name. It returns an error
// wrapping ErrUnknownTenant or ErrUnknown, or the failed read's.
func (p *Pauser) known(ctx context.Context, tenantID, name string) error {
	out, err := p.outbound(ctx, tenantID)
	if err != nil {
		return err
	}
	return Known(tenantID, out, name)
}

// outbound reads the tenant's outbound configuration. It returns an error
// wrapping ErrUnknownTenant or the failed read's.
func (p *Pauser) outbound(ctx context.Context, tenantID string) (tenant.Outbound, error) {
	out, err := p.Outbound.Outbound(ctx, tenantID)
	if errors.Is(err, tenant.ErrNotFound) {
		return out, fmt.Errorf("%w %s: no outbound configuration (is it onboarded?)", ErrUnknownTenant, tenantID)
	}
	return out, err
}
