// Package tenant resolves a tenant's configuration and credentials: which
// providers are enabled, their inbound signing secrets and settings, and
// (separately) the outbound credentials the worker signs forwarded events
// with.
//
// In AWS both live in SSM Parameter Store as KMS-encrypted SecureString
// parameters, one inbound and one outbound parameter per tenant, so IAM can
// let the ingest function read inbound parameters only. A Cache in front of
// the store keeps a warm Lambda from fetching per request.
package tenant

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Sentinel errors.
var (
	// ErrNotFound: no such tenant (or no such credential for it).
	ErrNotFound = errors.New("tenant not found")
	// ErrInvalidID: the tenant id fails ValidID.
	ErrInvalidID = errors.New("invalid tenant id")
)

// MaxIDLen keeps "<stack>-<tenant>-dlq.fifo" within SQS's 80-character
// queue name limit with room for a stack prefix.
const MaxIDLen = 40

// ValidID checks a tenant id before any lookup: 1–40 characters of
// lower-case letters, digits and '-', starting with a letter or digit. The
// id becomes part of queue names, parameter paths and idempotency keys, so
// nothing else is allowed in.
func ValidID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("%w: must be 1-%d characters", ErrInvalidID, MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0) {
			return fmt.Errorf("%w: only a-z, 0-9 and '-' (not first) are allowed", ErrInvalidID)
		}
	}
	return nil
}

// Inbound is what the ingest function may know about a tenant.
type Inbound struct {
	// Providers maps an enabled provider name to its secrets and settings.
	// A provider absent from the map is not enabled for the tenant.
	Providers map[string]webhook.Config `json:"providers"`
}

// Provider returns the tenant's configuration for name and whether the
// provider is enabled (present with at least one secret, or with settings
// for secret-less handshakes).
func (in Inbound) Provider(name string) (webhook.Config, bool) {
	cfg, ok := in.Providers[name]
	return cfg, ok
}

// Outbound is what the worker needs to deliver a tenant's events: the
// target URL of the built-in forward effect and the Standard Webhooks
// secrets it signs with (the first signs; all are listed so receivers can
// rotate). The ingest function has no access to it.
type Outbound struct {
	TargetURL string   `json:"targetUrl,omitempty"`
	Secrets   []string `json:"secrets,omitempty"`
	// Timeout is a Go duration for each forward attempt ("10s" default).
	Timeout string `json:"timeout,omitempty"`
}

// parameterName returns the SSM parameter of a tenant's inbound or outbound
// credentials: "<prefix>/tenants/<id>/<kind>".
func parameterName(prefix, id, kind string) string {
	return strings.TrimRight(prefix, "/") + "/tenants/" + id + "/" + kind
}
