// Package ledger makes the worker's side effects happen once per event, and
// keeps a worker that lost its message from overwriting newer work: effects
// are claimed under tenant + event key + effect name with a lease, completed
// by the message's deletion or conditionally, and fenced by the message's
// place in its conversation (its SQS SequenceNumber); Apply stores
// versioned entity state only when newer. The design, its guarantee and its
// cost are in docs/ledger.md.
//
// Stores are safe for concurrent use.
package ledger
