package console

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// outboundReader reads a tenant's outbound configuration (tenant.SSM).
type outboundReader interface {
	Outbound(ctx context.Context, id string) (tenant.Outbound, error)
}

// pauseStore pauses and resumes destinations (destination.DynamoDB).
type pauseStore interface {
	Pause(ctx context.Context, tenantID, name, reason string, now time.Time) (destination.State, error)
	Resume(ctx context.Context, tenantID, name string) (destination.Pause, error)
}

// Destinations is the Pauser of package destination, as scripts/destination
// pauses: only a destination the tenant's outbound configuration names
// (destination.Known), by the operator, with a reason
// (destination.CheckReason). Pausing a paused destination, or resuming one
// that is not, leaves it as it is and says so.
type Destinations struct {
	Outbound outboundReader
	States   pauseStore
	Now      func() time.Time
}

var _ Pauser = (*Destinations)(nil)

// known checks that the tenant has destination name. It returns an error
// wrapping inspect.ErrUnknownTenant or destination.ErrUnknown, or a failed
// call's.
func (d *Destinations) known(ctx context.Context, tenantID, name string) error {
	out, err := d.Outbound.Outbound(ctx, tenantID)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		return fmt.Errorf("%w %s: no outbound configuration (is it onboarded?)", inspect.ErrUnknownTenant, tenantID)
	case err != nil:
		return err
	}
	return destination.Known(tenantID, out, name)
}

// Pause pauses the destination and says so.
func (d *Destinations) Pause(ctx context.Context, tenantID, name, reason string) (string, error) {
	if err := destination.CheckReason(reason); err != nil {
		return "", fmt.Errorf("%w: reason: %w", ErrBadRequest, err)
	}
	if err := d.known(ctx, tenantID, name); err != nil {
		return "", err
	}
	now := d.Now()
	s, err := d.States.Pause(ctx, tenantID, name, reason, now)
	switch {
	case errors.Is(err, destination.ErrAlreadyPaused):
		return fmt.Sprintf("%s/%s was already paused, left as it is: %s", tenantID, name, s.Paused.Describe(now)), nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("paused %s/%s: %s. Its events wait on the queue, no attempt counted and none dead-lettered, until it is resumed.",
		tenantID, name, s.Paused.Describe(now)), nil
}

// Resume resumes the destination and says so.
func (d *Destinations) Resume(ctx context.Context, tenantID, name string) (string, error) {
	if err := d.known(ctx, tenantID, name); err != nil {
		return "", err
	}
	now := d.Now()
	p, err := d.States.Resume(ctx, tenantID, name)
	switch {
	case errors.Is(err, destination.ErrNotPaused):
		return fmt.Sprintf("%s/%s is not paused", tenantID, name), nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("resumed %s/%s, which was %s. Its waiting events come back within %s and are delivered in order, at its rate.",
		tenantID, name, p.Describe(now), destination.Poll(now.Sub(p.Since))+destination.DefaultCacheTTL), nil
}
