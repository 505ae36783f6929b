// Package worker is the Lambda behind every tenant's FIFO queue: it applies
// each queued event's side effects once, in order per conversation, and
// routes failures to a retry with backoff or, with the reason, to the
// tenant's dead-letter queue. Handlers are registered per provider and event
// type (Registry) and run each effect through Event.Once (package ledger);
// Forward is the built-in effect. Batches, deadlines, failure classes and
// the log line are described in docs/architecture.md.
package worker
