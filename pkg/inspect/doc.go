// Package inspect answers an operator's "what happened to this event?" and
// "how is this tenant doing?" from the stores a deployment keeps: the
// idempotency claim, the tenant's queue and dead-letter queue, the effect
// ledger, the payload bucket, and the ingest's log lines, the one store that
// pairs an id its sender shows but does not sign (GitHub's delivery id) with
// the event's key (Logs Insights deployed, `make run`'s log file locally),
// and the worker's log lines, from which it tells the event's history in
// time order. For a tenant with destinations it reads their names, filters
// and rates from the tenant's outbound configuration (never a URL or a
// secret), each destination's effect, and in the summary each one's rate
// limiter and when the backlog drains at its rate. It only reads: it never receives from a
// tenant's queue (a receive hides the message from the worker and counts
// towards its maxReceiveCount), and it lists the dead-letter queue the way
// package replay does, making every message visible again.
//
// What it cannot see is said in its output: which message of the queue an
// event is (SQS has no peek) before the worker logs it, which tool replayed
// a dead letter (the worker's line does not say), deliveries refused before the claim
// (bad signature, unknown tenant: their log lines name no event), and
// custom effects it was not told of unless it may Scan the ledger.
package inspect
