package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hookpack/hookpack/pkg/tenant"
)

// ErrUnknownDestination: a destination the tenant's routes do not name.
var ErrUnknownDestination = errors.New("unknown destination")

// routesReader reads a tenant's routes parameter (tenant.SSM.Routes).
type routesReader interface {
	Routes(ctx context.Context, id string) (tenant.Routes, error)
}

// CheckDestination checks that name is one of tenantID's destinations, as
// its routes parameter (written with its outbound configuration, no URL or
// secret) names them, before a Filter.Destination selects by it: a
// misspelt name would otherwise select nothing and look like a destination
// without dead letters. It returns an error wrapping ErrUnknownDestination
// (naming the tenant's destinations, or saying it has none: a targetUrl
// tenant, or one without a routes parameter, whose dead letters name no
// destination), or a wrapped error of the read.
func CheckDestination(ctx context.Context, routes routesReader, tenantID, name string) error {
	r, err := routes.Routes(ctx, tenantID)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		return fmt.Errorf("%w %q: tenant %s has no routes parameter, so its events are queued without streams and no dead letter of it names a destination "+
			"(leave -destination out, or select with -conversation, -type or -event)", ErrUnknownDestination, name, tenantID)
	case err != nil:
		return fmt.Errorf("destinations of tenant %s: %w", tenantID, err)
	}
	names := make([]string, len(r.Streams))
	for i, s := range r.Streams {
		if s.Name == name {
			return nil
		}
		names[i] = s.Name
	}
	if len(names) == 0 {
		return fmt.Errorf("%w %q: tenant %s has no destinations (a targetUrl): its dead letters name none", ErrUnknownDestination, name, tenantID)
	}
	return fmt.Errorf("%w %q: tenant %s's destinations are %s", ErrUnknownDestination, name, tenantID, strings.Join(names, ", "))
}
