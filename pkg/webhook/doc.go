// Package webhook defines what every provider adapter implements and what the
// ingest path knows about a delivery: the raw Request as the sender sent it,
// the verified Events derived from it, the tenant's per-provider Config, and
// the sentinel errors that the ingest handler maps to HTTP statuses in one
// place.
//
// A Provider verifies a signature on the raw bytes before anything parses
// them. Only after Verify returns nil does the ingest path call Events.
// Providers are stateless and safe for concurrent use.
//
// Adapters read a verified body in one validating pass that keeps only what
// they need: Paths.Scan for JSON (the members at a few dotted paths, raw
// sub-slices that can be scanned again, every byte checked as json.Valid
// checks it) and ParseForm for URL-encoded bodies (url.ParseQuery's verdict
// without its map). Nothing on that path decodes a whole document; Field and
// DecodeJSON remain for tooling that wants one.
package webhook
