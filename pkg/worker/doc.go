// Package worker is the Lambda behind every tenant's FIFO queue: it applies
// each queued event's side effects once, in order per conversation, and
// routes failures to a retry or to the tenant's dead-letter queue.
//
// # Batches and order
//
// The event source mapping delivers up to 10 messages (FIFO, no batching
// window) and the handler answers with a partial batch response
// (ReportBatchItemFailures); it never returns an error, which would make
// the mapping retry the whole batch. Messages of one message group (one
// conversation) run strictly in order; different groups run concurrently.
// When a message fails, it and every later message of its group in the
// batch are reported failed (outcome "blocked"), while other groups carry
// on. A dead-lettered message is not a failure: its conversation continues.
//
// # Deadlines
//
// Work stops a safety margin before the Lambda deadline. A message not
// started by then is reported failed with visibility 0 (outcome
// "deadline"), so it is redelivered at once, never dropped; handlers get a
// context ending at the work deadline; ledger completion, dead-lettering and
// visibility changes run in the margin, on a context that survives it.
//
// # Effects
//
// Handlers are registered per provider and event type (Registry). A handler
// gets the Event (the envelope plus delivery metadata) and runs each side
// effect through Event.Once, which claims it in the effect ledger (package
// ledger) keyed by tenant + event key + effect name, skips it when already
// completed, and passes the effect a stable idempotency key for the
// downstream call. Event.ApplyIfNewer writes versioned entity state for
// providers that deliver out of order. The first ledger write of a message
// takes the conversation's fencing token (one UpdateItem), and every
// ledger write carries it, so a worker that lost the message (its
// visibility timeout or lease ran out while it was stuck) can never
// overwrite an effect record or entity that a newer worker has written
// (see package ledger for the exact guarantee). One message with one
// effect costs 3 single-item DynamoDB writes, a duplicate 2, a message
// without effects none. Forward is the built-in effect: POST the event to the tenant's
// target URL, signed with Standard Webhooks headers (package forward).
//
// # Failures
//
// A handler error is:
//   - permanent when it (or anything it wraps) has a Permanent() bool method
//     returning true: Permanent(err), forward's 4xx rejections, an invalid
//     envelope, a missing handler or outbound configuration. The message is
//     sent to the tenant's FIFO DLQ (DLQURL) with the reason, attempt count,
//     original group and message id as message attributes, and reported
//     successful so the mapping deletes it from the source queue
//     (outcome "dead_lettered").
//   - fenced when the ledger reports a newer worker (ledger.ErrFenced,
//     ledger.ErrLeaseLost): the message is reported failed and its
//     visibility left alone; the newer worker owns it (outcome "fenced").
//   - otherwise transient: the message is reported failed and its
//     visibility set to Retry.Delay(ApproximateReceiveCount, RetryAfter) —
//     exponential backoff with jitter, at least any Retry-After, at most 12 h
//     (outcome "retried"). The queue's maxReceiveCount redrive to the same
//     DLQ stays the last resort.
//
// # Logs and metrics
//
// One JSON line per message (tenantId, provider, eventId, idempotencyKey,
// messageId, outcome, durationMs, attempt, …), which is also a CloudWatch
// EMF record: Messages by outcome ("processed", "skipped_duplicate",
// "retried", "dead_lettered", "blocked", "deadline", "fenced"),
// MessageDuration and EffectLatency. Bodies, secrets and signatures are
// never logged.
package worker
