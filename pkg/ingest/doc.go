// Package ingest is the webhook receiving path behind API Gateway: it
// verifies a delivery on its raw bytes, reads each event's idempotency key,
// sends the events whose key is free to the tenant's FIFO queue, records
// their keys once queued, and answers 2xx only once every event is durably
// queued. Nothing is written before the send; the queue's deduplication id
// absorbs overlapping deliveries of one event. Errors map to HTTP statuses
// in one place (status.go); each request writes one JSON log line of at
// most MaxLogLineBytes, which metric filters turn into metrics. The flow is
// described in docs/architecture.md.
package ingest
