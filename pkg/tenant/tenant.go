// Package tenant resolves a tenant's configuration and credentials: which
// providers are enabled, their inbound signing secrets and settings, and
// (separately) the outbound credentials the worker signs forwarded events
// with.
//
// In AWS both live in SSM Parameter Store as KMS-encrypted SecureString
// parameters, one inbound and one outbound parameter per tenant, so IAM can
// let the ingest function read inbound parameters only (and the third, the
// routes: the destinations' names and filters, no secret). A Cache in front of
// the store keeps a warm Lambda from fetching per request.
package tenant

import (
	"errors"
	"strings"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// ErrNotFound: no such tenant (or no such credential for it).
var ErrNotFound = errors.New("tenant not found")

// Inbound is what the ingest function may know about a tenant.
type Inbound struct {
	// Providers maps an enabled provider name to its secrets and settings.
	// A provider absent from the map is not enabled for the tenant.
	Providers map[string]webhook.Config `json:"providers"`
	// Routes are the tenant's streams, read from its routes parameter
	// (not part of the inbound one): SSM.Inbound fills them in.
	Routes Routes `json:"-"`
}

// Provider returns the tenant's configuration for name and whether the
// provider is enabled (present with at least one secret, or with settings
// for secret-less handshakes).
func (in Inbound) Provider(name string) (webhook.Config, bool) {
	cfg, ok := in.Providers[name]
	return cfg, ok
}

// Outbound is what the worker needs to deliver a tenant's events: either
// one target URL receiving every event (TargetURL, Secrets, Timeout), or
// several Destinations, each with its own secrets, filter and rate — not
// both. The secrets are Standard Webhooks secrets (the first signs; all are
// listed so receivers can rotate). The ingest function has no access to it.
type Outbound struct {
	TargetURL string   `json:"targetUrl,omitempty"`
	Secrets   []string `json:"secrets,omitempty"`
	// Timeout is a Go duration for each forward attempt ("10s" default).
	Timeout      string        `json:"timeout,omitempty"`
	Destinations []Destination `json:"destinations,omitempty"`
}

// parameterName returns the SSM parameter of a tenant's inbound or outbound
// credentials: "<prefix>/tenants/<id>/<kind>".
func parameterName(prefix, id, kind string) string {
	return strings.TrimRight(prefix, "/") + "/tenants/" + id + "/" + kind
}
