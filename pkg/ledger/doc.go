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
// counter. Take bumps it (one UpdateItem) when a worker starts on a
// message of the conversation and returns the new value, the worker's
// fencing token, with the counter's series (below). Every item the worker
// writes on the message's behalf, effect records and entity state, stores
// the token of its last writer, and every write is conditional on it, as
// with the store-side fencing tokens of Kleppmann's "How to do distributed
// locking": Claim and Apply require that the item's token is absent or not
// newer than the caller's, Complete and Fail that it equals the caller's
// and the lease token still matches. A write whose token is older than the
// item's returns ErrFenced, whatever else is wrong with it, so a stale
// worker learns to stop. Each of these is one single-item conditional
// write; there is no transaction and no read.
//
// The guarantee is per item: the tokens of the writes that land on an item
// never decrease (within a series, below, and until an effect record's
// retention ends, after which it counts as absent). Once a worker holding token n has written an effect
// record or an entity, no write under a token below n lands on it, so a
// worker stuck past its visibility timeout or lease can never overwrite
// what a newer worker wrote.
//
// A design that checks the conversation's counter in the same transaction
// as each write (TransactWriteItems: a ConditionCheck plus the write) also
// refuses the stale worker's writes to items the newer worker has not
// written yet. Without it those writes land; that window is harmless:
//   - Effects. A stale Claim lands only on a record that is absent,
//     FAILED or out of lease, and no newer worker wrote; the stale worker
//     runs the effect and completes it under its own lease. The newer
//     worker then finds it INPROGRESS (ErrInFlight: retry after the lease)
//     or COMPLETED (ErrCompleted: skip), and the effect has run once, as
//     promised. Had the newer worker claimed first, the stale worker's
//     Claim, Complete and Fail would return ErrFenced. An effect the stale
//     worker was running when its lease ran out and the newer worker took
//     it over runs twice with either design (a transaction cannot recall
//     an HTTP call); Key.IdempotencyKey is what absorbs that.
//   - State. A stale Apply lands only where no newer worker has written
//     the entity and only with a newer version than stored (the version
//     check stays): it writes what the newer worker, processing the same
//     message, would write. That worker's Apply of the same version then
//     returns ErrStale, and any newer version supersedes it.
//   - The window closes item by item, for good. A message is deleted only
//     after its handler finished, and SQS FIFO hands out the group's next
//     message only then; so every item the message's handler writes
//     carries the newer token before the conversation moves on, and the
//     stale worker cannot write any of them afterwards. This assumes the
//     handler writes the same effects and entities for the same event, and
//     derives an entity's version from the event (ApplyIfNewer's rule). A
//     handler whose choice of effects depends on something else (the
//     clock, an external read) may leave an effect untouched that the
//     stale worker then runs after later messages of the conversation.
//     (A consistent read of the conversation's counter before each write
//     would narrow that to the gap between the read and the write, for a
//     read unit per write; only a transaction closes it.)
//
// Tokens compare only within a series: a random id the conversation's
// item gets when it is created. The item expires after the retention
// without a Take; when DynamoDB's TTL deletes it, the counter starts again
// at 1 under a new series, and the higher tokens left on entities (which
// never expire) do not fence the new ones. A series ends only after the
// conversation was idle for the whole retention, far longer than a worker
// lives, so no stale worker spans two. For the same reason an entity
// written from two conversations is not fenced across them; versions order
// those writes.
//
// # State
//
// Apply stores an entity (tenant + entity id) only when the update's
// version is greater than the stored one, for providers that do not deliver
// in order; an older or equal version returns ErrStale. It is fenced too.
//
// # Cost
//
// One message with one effect costs 3 single-item writes: Take
// (UpdateItem), Claim (PutItem) and Complete (UpdateItem), one write unit
// each while the item is at most 1 KB (DynamoDB bills the larger of the
// old and new item: fence items take under 100 bytes and effect records
// about 200 with typical keys; an event key near its 1 KB limit, or a
// FAILED record's long reason, makes the effect's writes cost 2). At
// on-demand's $0.625 per million write units
// (us-east-1) that is $1.88 per million messages, down from 9 units
// ($5.63) when Claim and Complete were two-item transactions, which
// DynamoDB bills at twice the units of their items. A duplicate costs 2:
// Take and the rejected Claim (a failed conditional write is billed one
// unit; ReturnValuesOnConditionCheckFailure=ALL_OLD returns the record in
// the way with the rejection, so there is no read). Each further effect
// costs 2, each Apply 1 per KB of state, a failed effect Fail's 1 instead
// of Complete's. A message whose handler runs no effect costs nothing:
// Take is lazy.
//
// Reaching 2 writes per message takes a fencing token the worker already
// holds, so that Take, the only write that is not about the effect, goes
// away: the message's SQS FIFO SequenceNumber, which SQS assigns at send
// time and which increases within a message group, paired with
// ApproximateReceiveCount to order the deliveries of one message (both
// workers of a redelivered message hold the same SequenceNumber). Claim
// would store the pair and require it not to be older, exactly as tokens
// are compared now, and no conversation item would be needed. It is not
// the default because nothing local can test it: moto issues random
// sequence numbers, so a test of the ordering could not fail
// for the right reason, while in AWS the number is monotonic per group. The
// receive count is also documented as approximate.
//
// # Table
//
// One table, partition key "pk" (string), TTL attribute "expiration"
// (epoch seconds). Items: "fx|<tenant>|<effect>|<event key>" effect
// records, "cv|<tenant>|<conversation>" fences, "st|<tenant>|<entity>"
// entity state. Each holds "fence" (the counter; elsewhere the last
// writer's token) and "fence_series". Effect and conversation items expire after the retention
// (it must outlast the queue's and the DLQ's retention, so a replay still
// finds completed effects); entities never expire.
//
// Stores are safe for concurrent use.
package ledger
