package webhook

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// IdempotencyKey returns the dedup key of ev: "{tenant}#{provider}#{id}",
// where id is DedupID(ev). It is made of signed bytes only: a captured
// delivery re-sent with a fresh unsigned header keeps its key and is a
// duplicate.
func IdempotencyKey(tenant, provider string, ev Event) string {
	return tenant + "#" + provider + "#" + DedupID(ev)
}

// DedupID returns ev.ID, or when the provider has no signed id, "sha256:"
// followed by the hex SHA-256 of the event's defining fields
// (length-prefixed, so field boundaries cannot be shifted to collide), or of
// its body. ev.TraceID never takes part.
func DedupID(ev Event) string {
	if ev.ID != "" {
		return ev.ID
	}
	fields := ev.Defining
	if fields == nil {
		fields = [][]byte{ev.Body}
	}
	return "sha256:" + hashFields(fields)
}

// EventID returns the id the envelope, the response and the logs show for
// ev: its signed ID, else the provider's unsigned TraceID, else DedupID.
func EventID(ev Event) string {
	if ev.ID == "" && ev.TraceID != "" {
		return ev.TraceID
	}
	return DedupID(ev)
}

// Digest returns the payload digest of ev that the idempotency claim stores
// and compares when the key is seen again: the hex SHA-256 of ev.Body, or of
// the defining fields (length-prefixed) when the provider lists them, so that
// delivery metadata a provider re-renders on a retry does not make its own
// redelivery look like a different payload.
func Digest(ev Event) string {
	if ev.Defining != nil {
		return hashFields(ev.Defining)
	}
	sum := sha256.Sum256(ev.Body)
	return hex.EncodeToString(sum[:])
}

func hashFields(fields [][]byte) string {
	h := sha256.New()
	var n [8]byte
	for _, f := range fields {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// maxGroupID is SQS's limit for MessageGroupId and MessageDeduplicationId.
const maxGroupID = 128

// GroupID turns a conversation key into a valid SQS MessageGroupId: at most
// 128 characters from [A-Za-z0-9] and ASCII punctuation. A key that already
// qualifies is used as is, so groups stay readable in the console; any other
// key becomes "h:" plus its hex SHA-256. An empty conversation falls back to
// fallback (normally the event's idempotency key), making the event its own
// group.
func GroupID(conversation, fallback string) string {
	if conversation == "" {
		conversation = fallback
	}
	if len(conversation) <= maxGroupID && validSQSID(conversation) {
		return conversation
	}
	sum := sha256.Sum256([]byte(conversation))
	return "h:" + hex.EncodeToString(sum[:])
}

// DeduplicationID returns the SQS MessageDeduplicationId for an idempotency
// key: its hex SHA-256, always 64 valid characters.
func DeduplicationID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func validSQSID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '!' || c > '~' { // printable ASCII without space
			return false
		}
	}
	return true
}
