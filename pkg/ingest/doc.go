// Package ingest is the webhook receiving path behind API Gateway: it
// verifies a delivery on its raw bytes, claims each event's idempotency key,
// sends the events to the tenant's FIFO queue and answers 2xx only once
// every event is durably queued. Errors map to HTTP statuses in one place
// (status.go); each request writes one JSON log line of at most
// MaxLogLineBytes, which metric filters turn into metrics. The flow is
// described in docs/architecture.md.
package ingest
