package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/internal/lease"
	"github.com/hookpack/hookpack/pkg/tenantid"
)

// Status is the state of an effect record.
type Status string

// Effect statuses.
const (
	StatusInProgress Status = "INPROGRESS"
	StatusCompleted  Status = "COMPLETED"
	StatusFailed     Status = "FAILED"
	// StatusDead: the event's message was dead-lettered with Reason while
	// this effect was not completed (Bury). Only a replay of the event
	// claims it again, never a copy of the dead-lettered message itself.
	StatusDead Status = "DEAD"
)

// EventEffect names the event's own record: the record of its built-in
// forward effect, which the worker claims first for every message of the
// event whatever its handler, so that the default handler pays one write per
// event. Its status is the event's lifecycle as far as the ledger knows it:
// INPROGRESS by an earlier message of the conversation (deleted since) or
// COMPLETED means done; DEAD, or COMPLETED with a DeadMessage, means
// dead-lettered (only a replay runs it again).
const EventEffect = "forward"

// Defaults. Retention must outlast a message's life in the source queue
// plus the DLQ (14 days each), so that a replay finds its completed
// effects; Lease is used when a Claim passes none and should be at least
// the worker's timeout.
const (
	DefaultRetention = 35 * 24 * time.Hour
	DefaultLease     = 15 * time.Minute
)

// Sentinel errors.
var (
	// ErrCompleted: the effect already completed; skip it.
	ErrCompleted = errors.New("effect already completed")
	// ErrInFlight: another worker holds a live lease on the effect.
	ErrInFlight = errors.New("effect in flight")
	// ErrLeaseLost: the lease token no longer owns the effect record (it
	// was taken over, or completed or failed already).
	ErrLeaseLost = errors.New("lease lost")
	// ErrFenced: the item was written under a newer fencing token of the
	// conversation, so a newer worker took the caller's message; the
	// caller's token is stale and it must stop writing.
	ErrFenced = errors.New("fenced by a newer worker")
	// ErrDead: the event was dead-lettered (Bury) and the claimer is not a
	// replay of it: skip the message, its dead letter is the way back.
	ErrDead = errors.New("event dead-lettered")
	// ErrStale: the update's version is not newer than the stored entity's.
	ErrStale = errors.New("stale update")
	// ErrNotFound: no such entity or effect record.
	ErrNotFound = errors.New("not found")
	// ErrInvalidKey: a tenant, conversation, event, effect or entity name
	// fails validation.
	ErrInvalidKey = errors.New("invalid ledger key")
)

// Key names one effect of one event.
type Key struct {
	Tenant string
	// Event is the envelope's idempotency key "{tenant}#{provider}#{eventId}".
	Event string
	// Effect names the side effect: 1–64 characters of A-Z a-z 0-9 . _ : -.
	Effect string
}

func (k Key) String() string { return k.Tenant + "|" + k.Effect + "|" + k.Event }

// IdempotencyKey returns the key every downstream call of this effect
// carries (e.g. as the Idempotency-Key header): the hex SHA-256 of the
// length-prefixed tenant, event key and effect name. It is the same on every
// attempt, redelivery and replay, so a downstream that deduplicates by it
// absorbs an effect that ran but whose completion was lost. The format is
// stable: changing it would make downstream systems repeat effects.
func (k Key) IdempotencyKey() string {
	h := sha256.New()
	var n [8]byte
	for _, f := range []string{"hookpack-effect-v1", k.Tenant, k.Event, k.Effect} {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Fence is a worker's fencing token: where its message stands in its
// conversation, taken from the SQS FIFO record (NewFence), so it costs no
// write. SQS assigns every message a SequenceNumber that increases within its
// message group, and counts its receives; a later message of the
// conversation, or a later delivery of the same message, holds a greater
// token. Tokens compare only within one conversation.
type Fence struct {
	Tenant       string
	Conversation string // the SQS message group
	// Sequence is the message's SequenceNumber: decimal digits.
	Sequence string
	// Attempt is the message's ApproximateReceiveCount (≥ 1).
	Attempt int
	// Replay marks a message an operator redrove from the DLQ. It may hold an
	// event whose effects an earlier message claimed and then lost (its
	// worker crashed until SQS moved it to the DLQ), so its claims never
	// count an earlier message's INPROGRESS record as done.
	Replay bool
	// Queue names the incarnation of the queue the message came from (its
	// creation time): SequenceNumbers compare only within one queue, and a
	// queue deleted and created again under the same name may number from
	// the start, so tokens of another incarnation never fence (see series).
	// Empty means unknown: tokens then compare across incarnations. The
	// worker labels a message sent before the queue it reads was created
	// "<" and that creation time: an earlier incarnation, deleted since.
	Queue string
	// Origin identifies the enqueued copy of the event the message carries
	// (the envelope's receivedAt: each ingest send has its own, and a
	// message moved back from the DLQ keeps its body, so it keeps it too).
	// A claim never counts an earlier message's INPROGRESS record of the
	// same origin as done: that message is this one, moved back (see done).
	Origin string
	// MessageID is the SQS message id. A record buried by the message
	// (Bury) refuses every claim of that same message: its redelivery is a
	// stray copy, not a replay.
	MessageID string
	// Immediate marks a claim of an effect whose success is recorded at
	// once (a custom effect): an INPROGRESS record of it never counts as
	// done, whoever claimed it.
	Immediate bool
	// Event is the effect whose record is the event's own for this
	// message (EventEffect when empty; a destination's stream claims its
	// delivery's, "forward:<name>"): Bury never dead-letters a later copy
	// of an event whose record shows it done.
	Event string
	// HeldFrom, for a message dead-lettered behind an earlier message of
	// its conversation that failed in the same batch, is that message's
	// SequenceNumber: it and the messages after it have not left the queue,
	// so no claim of theirs shows the event done to Bury (see finished).
	HeldFrom string
}

// NewFence returns the fence of a message from its SQS attributes. It
// returns an error wrapping ErrInvalidKey for an invalid conversation, a
// sequence number that is not 1–40 decimal digits (a standard queue has
// none: the pack needs FIFO queues), or an attempt below 1.
func NewFence(tenantID, conversation, sequence string, attempt int, replay bool) (Fence, error) {
	f := Fence{Tenant: tenantID, Conversation: conversation, Sequence: sequence, Attempt: attempt, Replay: replay}
	return f, validFence(f)
}

// SameMessage reports whether a stored token (Record.Fence) was written for
// f's message (the same SequenceNumber), in any of its receives. It compares
// tokens of one series only: the caller checks the series (see Wrote).
func (f Fence) SameMessage(token string) bool {
	return len(token) >= 40 && token[:40] == pad(f.Sequence, 40)
}

// Wrote reports whether record r was last claimed by f's message, in any of
// its receives: the same SequenceNumber in the same series. A queue deleted
// and created again under its name may number from the start, so a message
// of the new queue can share an old one's SequenceNumber; its series tells
// them apart (a record without one, written before series were stored,
// compares by the SequenceNumber alone).
func (f Fence) Wrote(r Record) bool {
	return (r.Series == "" || r.Series == f.series()) && f.SameMessage(r.Fence)
}

// wrote reports whether token, stored under series, was written for f's
// message: the rule of Wrote for a record's raw attributes, a series
// required.
func (f Fence) wrote(series, token string) bool {
	return series == f.series() && f.SameMessage(token)
}

// TokenReceive returns the receive count (ApproximateReceiveCount) a stored
// token (Record.Fence) was written in: 0 for a malformed one.
func TokenReceive(token string) int {
	if len(token) != 50 {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimLeft(token[40:], "0"))
	return n
}

// Token is the fence as stored and compared: the sequence number and the
// attempt, zero-padded to a fixed width so that string order is token
// order.
func (f Fence) Token() string { return pad(f.Sequence, 40) + pad(strconv.Itoa(f.Attempt), 10) }

// first is the smallest token of f's message: an item whose token is below
// it was written for an earlier message of the conversation.
func (f Fence) first() string { return pad(f.Sequence, 40) + pad("0", 10) }

func pad(digits string, width int) string {
	return strings.Repeat("0", max(0, width-len(digits))) + digits
}

// record is the effect of f's event record.
func (f Fence) record() string {
	if f.Event == "" {
		return EventEffect
	}
	return f.Event
}

// series names the conversation (and the queue incarnation, when known)
// on stored items, so that tokens of other conversations (an entity written
// from several) or of a recreated queue never fence a write.
func (f Fence) series() string {
	s := f.Tenant + "|" + f.Conversation
	if f.Queue != "" {
		s += "|" + f.Queue
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// Lease is a held claim on an effect.
type Lease struct {
	Key   Key
	Fence Fence
	Token string
	// Expires is when another worker may take the effect over.
	Expires time.Time
	// Taken is the INPROGRESS record the claim took over after its lease
	// ended (an earlier run was interrupted), or nil.
	Taken *Record
	// Repeat reports that the claim replaced a record of an earlier run of
	// the effect that may have started: one taken over (Taken), one that
	// FAILED (its run may have reached the downstream before it failed, or
	// ran and could not record its completion), or one revived from DEAD.
	Repeat bool
}

// Record is the stored state of an effect.
type Record struct {
	Key          Key
	Status       Status
	LeaseExpires time.Time
	// Expires is when the record stops counting (the TTL).
	Expires time.Time
	// Fence is the token (Fence.Token) of the worker that last claimed it
	// (completing or failing it keeps the claimer's token).
	Fence string
	// Reason is why the effect last failed, or why its event was
	// dead-lettered.
	Reason string
	// DeadMessage is the message a DEAD record's event was dead-lettered
	// from, and DeadSent whether its dead letter is known sent (Buried). A
	// COMPLETED record with a DeadMessage is an effect that completed before
	// its event was dead-lettered: it stays completed (a replay skips it),
	// and its event refuses every claim but a replay's (ErrDead).
	DeadMessage string
	DeadSent    bool
	// DeadFrom is every message the record's event was dead-lettered from
	// (a set, sorted), kept when a replay revives the event: none of them
	// revives it again (see revives). Empty for an event never
	// dead-lettered.
	DeadFrom []string
	// Series names the conversation and queue incarnation of the worker
	// that last claimed it (see Fence): tokens of another series do not
	// compare.
	Series string
}

// ConflictError reports why a claim failed and the record in the way. It
// wraps ErrCompleted, ErrInFlight, ErrDead or ErrFenced.
type ConflictError struct {
	Record Record
	err    error
}

// NewConflictError returns the conflict a store reports for record r,
// wrapping err (one of ErrCompleted, ErrInFlight, ErrDead, ErrFenced):
// for fakes of a store.
func NewConflictError(r Record, err error) *ConflictError { return &ConflictError{Record: r, err: err} }

func (e *ConflictError) Error() string { return fmt.Sprintf("claim %s: %v", e.Record.Key, e.err) }
func (e *ConflictError) Unwrap() error { return e.err }

// conflict classifies the record that made a claim fail; done reports
// that an INPROGRESS record counts as completed (see done).
func conflict(r Record, done bool) error {
	if r.Dead() {
		return &ConflictError{Record: r, err: ErrDead}
	}
	if r.Status == StatusCompleted || r.Status == StatusInProgress && done {
		return &ConflictError{Record: r, err: ErrCompleted}
	}
	return &ConflictError{Record: r, err: ErrInFlight}
}

// Dead reports whether the record's event was dead-lettered: DEAD, or
// COMPLETED with a DeadMessage.
func (r Record) Dead() bool {
	return r.Status == StatusDead || r.Status == StatusCompleted && r.DeadMessage != ""
}

// Update is a versioned write of an entity's state.
type Update struct {
	// Entity identifies the entity within the tenant ("customer:cus_123").
	Entity string
	// Version orders updates: typically the provider's event time in epoch
	// milliseconds (epoch.Millis) or its sequence number.
	Version int64
	// Data is the entity's new state, stored as is.
	Data []byte
}

// Entity is the stored state of an entity.
type Entity struct {
	Tenant, ID string
	Version    int64
	Data       []byte
	// Fence is the token (Fence.Token) of the worker that last wrote it.
	Fence     string
	UpdatedAt time.Time
}

// Options configure a store: the Retention of effect records, the Lease of
// a Claim that passes none, and the clock. Zero values take
// DefaultRetention, DefaultLease and time.Now.
type Options = lease.Options

// maxName bounds conversation, event and entity names (a DynamoDB
// partition key holds at most 2048 bytes).
const maxName = 1024

// Item keys. Tenant ids and effect names cannot contain '|', and the free
// form part comes last, so distinct keys never share an item.
func effectPK(k Key) string { return "fx|" + k.Tenant + "|" + k.Effect + "|" + k.Event }

// effectKey parses an effectPK; the event part may contain '|'.
func effectKey(pk string) (Key, bool) {
	parts := strings.SplitN(pk, "|", 4)
	if len(parts) != 4 || parts[0] != "fx" {
		return Key{}, false
	}
	return Key{Tenant: parts[1], Effect: parts[2], Event: parts[3]}, true
}

func entityPK(t, id string) string       { return "st|" + t + "|" + id }
func attemptsPK(messageID string) string { return "at|" + messageID }

// validTenant checks a tenant id; its error wraps ErrInvalidKey.
func validTenant(tenantID string) error {
	if err := tenantid.Validate(tenantID); err != nil {
		return fmt.Errorf("%w: tenant: %v", ErrInvalidKey, err)
	}
	return nil
}

func validKey(k Key) error {
	if err := validTenant(k.Tenant); err != nil {
		return err
	}
	if err := ValidEffect(k.Effect); err != nil {
		return err
	}
	return validName("event", k.Event)
}

func validConversation(tenantID, conversation string) error {
	if err := validTenant(tenantID); err != nil {
		return err
	}
	return validName("conversation", conversation)
}

// validFence checks a fence passed to a write (a zero fence would pass
// every fence condition).
func validFence(f Fence) error {
	if err := validConversation(f.Tenant, f.Conversation); err != nil {
		return err
	}
	if len(f.Sequence) == 0 || len(f.Sequence) > 40 || strings.Trim(f.Sequence, "0123456789") != "" {
		return fmt.Errorf("%w: sequence number %q of %s: want 1-40 decimal digits (a FIFO queue's SequenceNumber)", ErrInvalidKey, f.Sequence, f.Conversation)
	}
	if f.Attempt < 1 || f.Attempt > 9_999_999_999 {
		return fmt.Errorf("%w: attempt %d of %s", ErrInvalidKey, f.Attempt, f.Conversation)
	}
	return nil
}

// newer reports whether an item last written under token stored of series
// storedSeries was written by a newer worker than f's: the caller is stale.
func newer(storedSeries, stored string, f Fence) bool {
	return storedSeries == f.series() && stored > f.Token()
}

// done reports whether an INPROGRESS effect record claimed under token
// stored of storedSeries, by a message of origin storedOrigin (byReplay: a
// replay), counts as completed for f: it was claimed for an earlier message
// of f's conversation, and SQS FIFO hands out a group's next message only
// after the earlier one left the queue — deleted when the worker reported
// it done, or dead-lettered, which buries its unfinished effects (DEAD) or,
// when SQS moved it by itself after repeated crashes, leaves them
// INPROGRESS. That last message comes back (a replay) as a new message with
// the same envelope, so the same origin: an earlier claim of the same
// origin counts as done only when a replay made it (a replay that was
// deleted; the event has several dead letters), marked or found by its
// record (see resent).
//
// A record of another series is another queue incarnation's: its message
// may have been lost with the queue that was deleted under it, so it never
// counts as done; its lease's end lets the event run again in the new queue
// (with the same idempotency key).
//
// An Immediate effect records its success at once, so an INPROGRESS record
// of it is never done: it was interrupted. A replay never counts a record
// without an origin as done.
func done(storedSeries, stored, storedOrigin string, byReplay bool, f Fence) bool {
	switch {
	case f.Immediate:
		return false
	case storedSeries != f.series():
		return false
	case storedOrigin == "":
		return !f.Replay && stored < f.first()
	}
	return stored < f.first() && (storedOrigin != f.Origin || byReplay)
}

// resent reports whether f is another message than the one that wrote a
// record of origin storedOrigin under token stored of storedSeries, carrying
// the same enqueued copy of the event: the ingest sends each copy once, so
// f is a copy of that message's body sent again (a replay, by any tool).
func resent(storedSeries, stored, storedOrigin string, f Fence) bool {
	return f.Origin != "" && storedOrigin == f.Origin && !f.wrote(storedSeries, stored)
}

// revives reports whether f may claim a DEAD record buried by message
// deadMessage of origin storedOrigin, whose event was dead-lettered from
// the messages deadFrom: a message it was never dead-lettered from that is
// a replay (marked, or moved back with its dead letter's attributes), or a
// copy of the dead letter's body re-sent by hand (the same origin). A copy
// of any earlier dead-lettered message (a duplicate invocation, a lost
// deletion) never revives it, even after a later replay took the mark.
func revives(deadMessage string, deadFrom []string, storedOrigin string, f Fence) bool {
	return f.MessageID != deadMessage && !slices.Contains(deadFrom, f.MessageID) &&
		(f.Replay || storedOrigin != "" && storedOrigin == f.Origin)
}

// adopts reports whether f's claim of effect k takes over, into its own
// series, the COMPLETED event record (f's Event, not dead-lettered) that a
// message of another series wrote: another incarnation of the queue, deleted
// since. Tokens compare only within a series, so without it no later copy
// of the event in f's queue would find the event done by f (see finished):
// one that fails after f was deleted would dead-letter a done event. Only a
// message of the queue's current incarnation adopts (a known label, not "<",
// see Fence.Queue): an earlier incarnation's message must never complete the
// new queue's copies. The record stays COMPLETED; it takes f's token, as if
// f had completed it, which is what a claim of f finding it done means.
func adopts(storedSeries string, f Fence, k Key) bool {
	return k.Effect == f.record() && f.Queue != "" && !strings.HasPrefix(f.Queue, "<") && storedSeries != f.series()
}

// finished reports whether the event record r (EventEffect), stored under
// series, origin and byReplay, shows its event done for a message f about to
// be dead-lettered: completed, or claimed and not interrupted (see done), by
// an earlier message of f's conversation, and not dead-lettered itself. Such
// a message is a later copy of a done event: it is deleted, never
// dead-lettered (Bury reports ErrCompleted).
func finished(r Record, series, origin string, byReplay bool, f Fence) bool {
	f.Immediate = false
	if f.HeldFrom != "" && r.Fence >= pad(f.HeldFrom, 40)+pad("0", 10) {
		return false
	}
	switch r.Status {
	case StatusCompleted:
		return r.DeadMessage == "" && series == f.series() && r.Fence < f.first()
	case StatusInProgress:
		return done(series, r.Fence, origin, byReplay, f)
	}
	return false
}

func validName(what, s string) error {
	if s == "" || len(s) > maxName {
		return fmt.Errorf("%w: %s must be 1-%d bytes", ErrInvalidKey, what, maxName)
	}
	return nil
}

// ValidEffect checks an effect name: 1–64 characters of A-Z a-z 0-9 . _ : -.
// It returns an error wrapping ErrInvalidKey.
func ValidEffect(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: effect name must be 1-64 characters", ErrInvalidKey)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return fmt.Errorf("%w: effect name %q: only A-Z a-z 0-9 . _ : - are allowed", ErrInvalidKey, name)
		}
	}
	return nil
}

// checkClaim validates what Claim needs: a well-formed key and a fence of
// the same tenant.
func checkClaim(f Fence, k Key) error {
	if err := validKey(k); err != nil {
		return err
	}
	if err := validFence(f); err != nil {
		return err
	}
	if f.Tenant != k.Tenant {
		return fmt.Errorf("%w: fence of tenant %s used for tenant %s", ErrInvalidKey, f.Tenant, k.Tenant)
	}
	return nil
}

// checkApply validates what Apply needs: a fence and an entity name.
func checkApply(f Fence, u Update) error {
	if err := validFence(f); err != nil {
		return err
	}
	return validName("entity", u.Entity)
}
