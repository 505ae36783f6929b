package ledger

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/hookpack/hookpack/pkg/tenant"
)

// Status is the state of an effect record.
type Status string

// Effect statuses.
const (
	StatusInProgress Status = "INPROGRESS"
	StatusCompleted  Status = "COMPLETED"
	StatusFailed     Status = "FAILED"
)

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

// Fence is a worker's fencing token for one conversation, returned by Take.
// Only Take makes valid fences.
type Fence struct {
	Tenant       string
	Conversation string
	// Token is the conversation's counter after Take bumped it (≥ 1).
	Token int64
	// Series names the counter Token was drawn from: a random id given to
	// the conversation's fence item when it is created. Tokens compare only
	// within a series, so an item written from another conversation, or
	// before the conversation's fence item expired and its counter started
	// again at 1, never fences a write.
	Series string
}

// Lease is a held claim on an effect.
type Lease struct {
	Key   Key
	Fence Fence
	Token string
	// Expires is when another worker may take the effect over.
	Expires time.Time
}

// Record is the stored state of an effect.
type Record struct {
	Key          Key
	Status       Status
	LeaseExpires time.Time
	// Expires is when the record stops counting (the TTL).
	Expires time.Time
	// Fence is the fencing token of the worker that last claimed it (or
	// completed or failed it: those keep the claimer's token).
	Fence int64
	// Reason is why the effect last failed.
	Reason string
}

// ConflictError reports why a claim failed and the record in the way. It
// wraps ErrCompleted or ErrInFlight.
type ConflictError struct {
	Record Record
	err    error
}

func (e *ConflictError) Error() string { return fmt.Sprintf("claim %s: %v", e.Record.Key, e.err) }
func (e *ConflictError) Unwrap() error { return e.err }

func conflict(r Record) error {
	if r.Status == StatusCompleted {
		return &ConflictError{Record: r, err: ErrCompleted}
	}
	return &ConflictError{Record: r, err: ErrInFlight}
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
	// Fence is the token of the worker that last wrote it.
	Fence     int64
	UpdatedAt time.Time
}

// Options configure a store. Zero values take the defaults.
type Options struct {
	// Retention of effect records and conversation fences.
	Retention time.Duration
	// Lease used by a Claim that passes no lease.
	Lease time.Duration
	// Now is the clock; tests inject one to move past leases and expiries.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (o Options) lease(d time.Duration) time.Duration {
	if d <= 0 {
		return o.Lease
	}
	return d
}

// maxName bounds conversation, event and entity names (a DynamoDB
// partition key holds at most 2048 bytes).
const maxName = 1024

// Item keys. Tenant ids and effect names cannot contain '|', and the free
// form part comes last, so distinct keys never share an item.
func effectPK(k Key) string              { return "fx|" + k.Tenant + "|" + k.Effect + "|" + k.Event }
func conversationPK(t, c string) string  { return "cv|" + t + "|" + c }
func entityPK(t, id string) string       { return "st|" + t + "|" + id }
func attemptsPK(messageID string) string { return "at|" + messageID }

func validKey(k Key) error {
	if err := tenant.ValidID(k.Tenant); err != nil {
		return fmt.Errorf("%w: tenant: %v", ErrInvalidKey, err)
	}
	if err := ValidEffect(k.Effect); err != nil {
		return err
	}
	return validName("event", k.Event)
}

func validConversation(tenantID, conversation string) error {
	if err := tenant.ValidID(tenantID); err != nil {
		return fmt.Errorf("%w: tenant: %v", ErrInvalidKey, err)
	}
	return validName("conversation", conversation)
}

// validFence checks a fence passed to a write: a valid conversation, and a
// token and series only Take issues (a zero fence would pass every fence
// condition).
func validFence(f Fence) error {
	if err := validConversation(f.Tenant, f.Conversation); err != nil {
		return err
	}
	if f.Token < 1 || f.Series == "" {
		return fmt.Errorf("%w: fence of %s was not issued by Take", ErrInvalidKey, f.Conversation)
	}
	return nil
}

// newer reports whether an item last written under token stored of series
// storedSeries was written by a newer worker than f's: the caller is stale.
func newer(storedSeries string, stored int64, f Fence) bool {
	return storedSeries == f.Series && stored > f.Token
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

// newToken returns a random lease token.
func newToken() string { return randomHex(16) }

// newSeries returns a random fence series id; 64 bits suffice, as a series
// is only ever compared with the series stored on the same item.
func newSeries() string { return randomHex(8) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
