// Package ledger makes the worker's side effects happen once per event,
// and keeps a worker that lost its message from overwriting newer work.
//
// # Effects
//
// Every side effect runs through the ledger under a Key: tenant + event key
// ("{tenant}#{provider}#{eventId}", never the SQS message id, which changes
// on replay) + effect name. A worker claims the key with a conditional write
// that carries a random lease token; an effect already completed is
// reported with ErrCompleted and skipped; an effect whose lease ran out (its
// worker died) is taken over; completion is conditional on the lease token.
// A failed effect is marked FAILED and can be claimed again at once.
// Because the effect may have run even when its completion was lost,
// Key.IdempotencyKey gives every downstream call the same key on every
// attempt, so the downstream system absorbs the repeat.
//
// # Fencing
//
// Each conversation (tenant + SQS message group) has one item holding a
// monotonically increasing fence. Take bumps it when a worker starts on a
// message of the conversation and returns the new value, the worker's
// fencing token. Claim, Complete and Apply are single TransactWriteItems
// requests: a ConditionCheck that the conversation's fence still equals the
// caller's token, plus the conditional write itself. DynamoDB evaluates both
// atomically, so there is no window in which a stale worker's write can land
// after a newer worker took the conversation: a worker stuck past its
// visibility timeout or lease gets ErrFenced from every write it attempts
// and can never overwrite the newer worker's effects or state. Fail is
// deliberately not fenced: it only gives up the caller's own lease.
//
// # State
//
// Apply stores an entity (tenant + entity id) only when the update's
// version is greater than the stored one, for providers that do not deliver
// in order; an older or equal version returns ErrStale. It is fenced too.
//
// # Cost
//
// One message with one effect costs 3 write requests: Take (UpdateItem),
// Claim and Complete (one TransactWriteItems each; DynamoDB bills a
// transaction at twice the write units of its items). A duplicate costs
// Take plus the failed Claim. A message whose handler runs no effect costs
// nothing: Take is lazy.
//
// Reaching 2 requests per message would take one of:
//   - a fencing token the worker already holds instead of one DynamoDB
//     issues, so Take folds into Claim's transaction (TransactWriteItems
//     returns no values, so a counter bumped there cannot be read back).
//     SQS FIFO's SequenceNumber (with ApproximateReceiveCount) increases per
//     message group and would serve, but emulators issue random sequence
//     numbers, so it cannot be tested locally;
//   - or holding the effect lease on the conversation item itself (one
//     message of a conversation is in flight at a time): Take writes fence
//     and lease in one UpdateItem, and completion is one transaction that
//     puts the COMPLETED effect record (attribute_not_exists) conditional on
//     the conversation's fence and lease. This serialises a message's
//     effects and costs a read per effect to skip completed ones.
//
// # Table
//
// One table, partition key "pk" (string), TTL attribute "expiration"
// (epoch seconds). Items: "fx|<tenant>|<effect>|<event key>" effect
// records, "cv|<tenant>|<conversation>" fences, "st|<tenant>|<entity>"
// entity state. Effect and conversation items expire after the retention
// (it must outlast the queue's and the DLQ's retention, so a replay still
// finds completed effects); entities never expire.
//
// Stores are safe for concurrent use.
package ledger
