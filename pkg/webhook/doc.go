// Package webhook defines what every provider adapter implements and what the
// ingest path knows about a delivery: the raw Request as the sender sent it,
// the verified Events derived from it, the tenant's per-provider Config, and
// the sentinel errors that the ingest handler maps to HTTP statuses in one
// place.
//
// A Provider verifies a signature on the raw bytes before anything parses
// them. Only after Verify returns nil does the ingest path call Events.
// Providers are stateless and safe for concurrent use.
package webhook
