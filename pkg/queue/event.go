package queue

import (
	"fmt"
	"time"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// EventMessage builds the queue message of one verified event exactly as
// the ingest path sends it: the version-1 envelope, MessageGroupId from the
// conversation, MessageDeduplicationId from the idempotency key, the
// event's identity as attributes (EnvelopeIdentity), whatever
// its size (SQS.SendBatch offloads a large body or refuses it). Tools that
// fabricate worker input (make events) use it too, so their messages cannot
// drift from what ingest sends.
func EventMessage(tenantID, providerName string, ev webhook.Event, now time.Time) (Message, envelope.Envelope, error) {
	key := webhook.IdempotencyKey(tenantID, providerName, ev)
	env := envelope.Envelope{
		Version:      envelope.Version,
		Key:          key,
		Tenant:       tenantID,
		Provider:     providerName,
		EventID:      webhook.EventID(ev),
		Type:         ev.Type,
		Conversation: ev.Conversation,
		ReceivedAt:   now.UTC(),
		Headers:      ev.Headers,
	}
	env.SetBody(ev.Body)
	b, err := env.Encode()
	if err != nil {
		return Message{}, env, fmt.Errorf("encode envelope %s: %w", key, err)
	}
	m := Message{
		GroupID:         webhook.GroupID(ev.Conversation, key),
		DeduplicationID: webhook.DeduplicationID(key),
		Body:            b,
		Attributes:      EnvelopeIdentity(&env).Attributes(),
	}
	return m, env, nil
}
