package queue

import (
	"errors"
	"strings"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// AttrStream names what a message does for its event when its tenant's
// destinations are streams of their own (docs/architecture.md, "Streams"):
// Stream.String's value. A message without it is the event's only message
// and delivers to every destination that selects it, and runs its custom
// effects (a tenant with a targetUrl, or queued before its routes were
// written).
const AttrStream = "hookpack.stream"

// Stream is the duty of one of an event's messages: deliver to Destination
// only (its ledger effect "forward:<name>" is the message's own event
// record), run the custom effects (Effects), or both (the one message of a
// tenant with a single destination). The zero Stream is a message without
// AttrStream.
type Stream struct {
	Destination string
	Effects     bool
}

// streamEffects is the value part of AttrStream for Stream.Effects;
// streamForward prefixes a destination (destination names never hold ':'
// or ',').
const (
	streamEffects = "effects"
	streamForward = "forward:"
)

// String returns s as AttrStream carries it: "forward:<name>", "effects",
// or "effects,forward:<name>"; "" for the zero Stream.
func (s Stream) String() string {
	var parts []string
	if s.Effects {
		parts = append(parts, streamEffects)
	}
	if s.Destination != "" {
		parts = append(parts, streamForward+s.Destination)
	}
	return strings.Join(parts, ",")
}

// ErrStream is returned by ParseStream for a value it cannot read.
var ErrStream = errors.New("invalid " + AttrStream + " attribute")

// ParseStream reads an AttrStream value (Stream.String's form).
func ParseStream(v string) (Stream, error) {
	var s Stream
	for part := range strings.SplitSeq(v, ",") {
		name, isForward := strings.CutPrefix(part, streamForward)
		switch {
		case part == streamEffects && !s.Effects:
			s.Effects = true
		case isForward && name != "" && s.Destination == "" && !strings.ContainsAny(name, ":,"):
			s.Destination = name
		default:
			return Stream{}, ErrStream
		}
	}
	return s, nil
}

// StreamGroup is the message group of destination's stream of the
// conversation whose group is conversation: "<conversation>|<destination>",
// or its hash when that is not a valid SQS id (webhook.GroupID).
func StreamGroup(conversation, destination string) string {
	return webhook.GroupID(conversation+"|"+destination, "")
}

// ForStream returns m, an event's message (EventMessage), as its message of
// stream s: AttrStream set and, for a destination's own stream (s without
// Effects), that stream's group (StreamGroup) and deduplication id, so that
// SQS orders and deduplicates each stream on its own. The effects, or the
// one stream of a tenant with a single destination, stay on the
// conversation's group. AttrConversation keeps the conversation's group.
func (m Message) ForStream(s Stream) Message {
	attrs := make(map[string]string, len(m.Attributes)+1)
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	attrs[AttrStream] = s.String()
	out := Message{GroupID: m.GroupID, DeduplicationID: m.DeduplicationID, Body: m.Body, Attributes: attrs}
	if !s.Effects && s.Destination != "" {
		out.GroupID = StreamGroup(m.GroupID, s.Destination)
		out.DeduplicationID = webhook.DeduplicationID(m.Attributes[AttrEventKey] + "|" + s.String())
	}
	return out
}
