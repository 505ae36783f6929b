package queue

import (
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/tenantid"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Message attributes naming the event a message carries, outside its body:
// every message ingest sends has them, so a worker that cannot read the
// body (an offloaded one it is denied, or that is gone) still knows which
// event to give up on. A dead letter keeps the names (the worker's
// AttrEventKey is AttrEventKey).
const (
	// AttrTenant is the tenant id.
	AttrTenant = "hookpack.tenant"
	// AttrEventKey is the envelope's idempotency key,
	// "{tenant}#{provider}#{eventId}".
	AttrEventKey = "hookpack.eventKey"
	// AttrConversation is the conversation's message group,
	// webhook.GroupID(conversation, key): what the ledger's fences call the
	// conversation, always a valid, short SQS id.
	AttrConversation = "hookpack.conversation"
	// AttrReceivedAt is the envelope's receivedAt (RFC 3339 with
	// nanoseconds, UTC): it tells the ingest's copies of one event apart.
	AttrReceivedAt = "hookpack.receivedAt"
)

// Identity is what names the event of a message and the copy of it that
// ingest queued.
type Identity struct {
	Tenant string
	// EventKey is the idempotency key, prefixed by Tenant and '#'.
	EventKey string
	// Conversation is the message group of the event's conversation (see
	// AttrConversation).
	Conversation string
	// ReceivedAt is the envelope's ReceivedAt, to the nanosecond.
	ReceivedAt time.Time
	// Stream is the message's duty (AttrStream; zero without it): a dead
	// letter keeps it, so it names its destination.
	Stream Stream
}

// EnvelopeIdentity returns the identity of e, as ingest sends it.
func EnvelopeIdentity(e *envelope.Envelope) Identity {
	return Identity{Tenant: e.Tenant, EventKey: e.Key, Conversation: webhook.GroupID(e.Conversation, e.Key), ReceivedAt: e.ReceivedAt.UTC()}
}

// Attributes returns id as message attributes (Message.Attributes).
func (id Identity) Attributes() map[string]string {
	attrs := map[string]string{
		AttrTenant:       id.Tenant,
		AttrEventKey:     id.EventKey,
		AttrConversation: id.Conversation,
		AttrReceivedAt:   id.ReceivedAt.UTC().Format(time.RFC3339Nano),
	}
	if v := id.Stream.String(); v != "" {
		attrs[AttrStream] = v
	}
	return attrs
}

// StreamOf reads a received message's AttrStream: the zero Stream when it
// has none, an error wrapping ErrStream when it cannot be read.
func StreamOf(attrs map[string]events.SQSMessageAttribute) (Stream, error) {
	v, ok := attrValue(attrs, AttrStream)
	if !ok {
		return Stream{}, nil
	}
	return ParseStream(v)
}

// IdentityOf reads the identity a message received from SQS
// carries in attrs (events.SQSMessage.MessageAttributes), its Stream
// included. It returns false
// unless all four identity attributes are there and valid (and AttrStream
// is, when present): a tenant id
// (tenantid.Validate), an event key "{tenant}#{provider}#{id}" of that
// tenant, a message group id and an RFC 3339 time. A message without them
// was not sent by ingest (or not by this version of it): its body is then
// all there is.
func IdentityOf(attrs map[string]events.SQSMessageAttribute) (Identity, bool) {
	tenant, ok1 := attrValue(attrs, AttrTenant)
	key, ok2 := attrValue(attrs, AttrEventKey)
	group, ok3 := attrValue(attrs, AttrConversation)
	at, ok4 := attrValue(attrs, AttrReceivedAt)
	if !ok1 || !ok2 || !ok3 || !ok4 || tenantid.Validate(tenant) != nil {
		return Identity{}, false
	}
	rest, ok := strings.CutPrefix(key, tenant+"#")
	provider, id, _ := strings.Cut(rest, "#")
	if !ok || provider == "" || id == "" || webhook.GroupID(group, "") != group {
		return Identity{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return Identity{}, false
	}
	s, err := StreamOf(attrs)
	if err != nil {
		return Identity{}, false
	}
	return Identity{Tenant: tenant, EventKey: key, Conversation: group, ReceivedAt: t.UTC(), Stream: s}, true
}

// attrValue returns the value of attribute name, a String or (for text SQS
// would refuse as one, see attributes) a Binary.
func attrValue(attrs map[string]events.SQSMessageAttribute, name string) (string, bool) {
	a, ok := attrs[name]
	switch {
	case !ok:
		return "", false
	case a.DataType == "String" && a.StringValue != nil:
		return *a.StringValue, true
	case a.DataType == "Binary" && a.BinaryValue != nil:
		return string(a.BinaryValue), true
	}
	return "", false
}
