package queue

import (
	"bytes"
	"context"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// received returns attrs as the worker gets them: the SDK's attributes of
// a sent message as Lambda's SQS event carries them.
func received(attrs map[string]types.MessageAttributeValue) map[string]events.SQSMessageAttribute {
	out := make(map[string]events.SQSMessageAttribute, len(attrs))
	for k, v := range attrs {
		out[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}

// wireSize is an entry's size as SQS counts it.
func wireSize(e types.SendMessageBatchRequestEntry) int {
	n := len(aws.ToString(e.MessageBody))
	for k, v := range e.MessageAttributes {
		n += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

func TestIdentityRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 22, 17, 0, 0, 123456789, time.FixedZone("CET", 3600))
	tests := []struct {
		name       string
		ev         webhook.Event
		wantGroup  string
		wantBinary string // the attribute sent as Binary, if any
	}{
		{"plain", webhook.Event{ID: "evt_1", Conversation: "cus_9"}, "cus_9", ""},
		{"no conversation", webhook.Event{ID: "evt_2"}, webhook.GroupID("", "acme#stripe#evt_2"), ""},
		{"conversation not an SQS id", webhook.Event{ID: "evt_3", Conversation: "a conversation with spaces"}, webhook.GroupID("a conversation with spaces", ""), ""},
		{"id with a '#'", webhook.Event{ID: "a#b", Conversation: "c"}, "c", ""},
		{"id SQS refuses as text", webhook.Event{ID: "evt\x01\uffff", Conversation: "c"}, "c", AttrEventKey},
		{"signed body only", webhook.Event{Body: []byte(`{"a":1}`), Conversation: "c"}, "c", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, env, err := EventMessage("acme", "stripe", tt.ev, at)
			if err != nil {
				t.Fatal(err)
			}
			sent := attributes(m.Attributes)
			for k, v := range sent {
				if want := map[bool]string{true: "Binary", false: "String"}[k == tt.wantBinary]; aws.ToString(v.DataType) != want {
					t.Errorf("attribute %s is a %s, want %s", k, aws.ToString(v.DataType), want)
				}
			}
			got, ok := IdentityOf(received(sent))
			want := Identity{Tenant: "acme", EventKey: env.Key, Conversation: tt.wantGroup, ReceivedAt: at.UTC()}
			if !ok || got != want || got.EventKey != webhook.IdempotencyKey("acme", "stripe", tt.ev) || !got.ReceivedAt.Equal(env.ReceivedAt) {
				t.Errorf("IdentityOf(EventMessage(%+v)) = %+v, %v; want %+v", tt.ev, got, ok, want)
			}
			if got != EnvelopeIdentity(&env) || m.GroupID != got.Conversation {
				t.Errorf("IdentityOf() = %+v; EnvelopeIdentity() = %+v, group %q", got, EnvelopeIdentity(&env), m.GroupID)
			}
		})
	}
}

func TestIdentityOfRefuses(t *testing.T) {
	str := func(s string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(s)}
	}
	valid := map[string]events.SQSMessageAttribute{
		AttrTenant:       str("acme"),
		AttrEventKey:     str("acme#stripe#evt_1"),
		AttrConversation: str("cus_9"),
		AttrReceivedAt:   str("2026-11-22T17:00:00.123456789Z"),
		"reason":         str("a foreign attribute is no matter"),
	}
	if _, ok := IdentityOf(valid); !ok {
		t.Fatalf("IdentityOf(%v) = false, want true", valid)
	}
	tests := []struct {
		name string
		attr string
		a    events.SQSMessageAttribute
		drop bool
		key  string // the event key to go with it, when not the valid one
	}{
		{"no tenant", AttrTenant, events.SQSMessageAttribute{}, true, ""},
		{"no key", AttrEventKey, events.SQSMessageAttribute{}, true, ""},
		{"no conversation", AttrConversation, events.SQSMessageAttribute{}, true, ""},
		{"no time", AttrReceivedAt, events.SQSMessageAttribute{}, true, ""},
		{"invalid tenant", AttrTenant, str("Acme"), false, "Acme#stripe#evt_1"},
		{"tenant with a '#'", AttrTenant, str("acme#stripe"), false, "acme#stripe#x#evt_1"},
		{"tenant too long", AttrTenant, str(strings.Repeat("a", 41)), false, strings.Repeat("a", 41) + "#stripe#evt_1"},
		{"empty tenant", AttrTenant, str(""), false, "#stripe#evt_1"},
		{"tenant a Number", AttrTenant, events.SQSMessageAttribute{DataType: "Number", StringValue: aws.String("1")}, false, ""},
		{"String without a value", AttrTenant, events.SQSMessageAttribute{DataType: "String"}, false, ""},
		{"another tenant's key", AttrEventKey, str("globex#stripe#evt_1"), false, ""},
		{"key of a tenant it prefixes", AttrEventKey, str("acme2#stripe#evt_1"), false, ""},
		{"key without a provider", AttrEventKey, str("acme##evt_1"), false, ""},
		{"key without an id", AttrEventKey, str("acme#stripe#"), false, ""},
		{"key without a second '#'", AttrEventKey, str("acme#stripe"), false, ""},
		{"key without a '#'", AttrEventKey, str("acme"), false, ""},
		{"empty conversation", AttrConversation, str(""), false, ""},
		{"conversation not a group id", AttrConversation, str("cus 9"), false, ""},
		{"conversation too long for a group", AttrConversation, str(strings.Repeat("c", 129)), false, ""},
		{"time not RFC 3339", AttrReceivedAt, str("2026-11-22 17:00:00"), false, ""},
		{"date only", AttrReceivedAt, str("2026-11-22"), false, ""},
		{"epoch milliseconds", AttrReceivedAt, str("1795366800123"), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attrs := maps.Clone(valid)
			if tt.key != "" {
				attrs[AttrEventKey] = str(tt.key)
			}
			if tt.drop {
				delete(attrs, tt.attr)
			} else {
				attrs[tt.attr] = tt.a
			}
			if got, ok := IdentityOf(attrs); ok {
				t.Errorf("IdentityOf(%s = %+v) = %+v, true; want false", tt.attr, tt.a, got)
			}
		})
	}
	if got, ok := IdentityOf(nil); ok {
		t.Errorf("IdentityOf(nil) = %+v, true; want false", got)
	}
	// A Binary value holds what String could not.
	attrs := maps.Clone(valid)
	attrs[AttrEventKey] = events.SQSMessageAttribute{DataType: "Binary", BinaryValue: []byte("acme#stripe#evt\x01")}
	if got, ok := IdentityOf(attrs); !ok || got.EventKey != "acme#stripe#evt\x01" {
		t.Errorf("IdentityOf(Binary key) = %+v, %v; want the key", got, ok)
	}
}

// captureAPI records the entries of SendMessageBatch calls and queues all.
type captureAPI struct {
	sqsAPI
	entries []types.SendMessageBatchRequestEntry
}

func (c *captureAPI) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		c.entries = append(c.entries, e)
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// memS3 keeps objects in memory.
type memS3 struct {
	objectAPI
	objects map[string][]byte
}

func (m *memS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b, err := io.ReadAll(in.Body)
	m.objects[aws.ToString(in.Key)] = b
	return &s3.PutObjectOutput{}, err
}

// TestEventSizeCountsIdentity: an event message is as large as SQS counts
// it, identity attributes included, so the largest one sent inline fits
// MaxEventBytes on the wire and one byte more is offloaded.
func TestEventSizeCountsIdentity(t *testing.T) {
	ev := func(pad int) webhook.Event {
		return webhook.Event{ID: "evt_1", Conversation: "cus_9", Body: []byte(`{"pad":"` + strings.Repeat("x", pad) + `"}`)}
	}
	// A fixed time: RFC 3339 drops trailing zeros of the nanoseconds.
	at := time.Date(2026, 11, 22, 17, 0, 0, 123456789, time.UTC)
	m, _, err := EventMessage("acme", "stripe", ev(0), at)
	if err != nil {
		t.Fatal(err)
	}
	pad := MaxEventBytes - m.Size() // a raw JSON body adds its bytes as they are
	for _, tt := range []struct {
		name      string
		pad       int
		offloaded bool
	}{
		{"at MaxEventBytes", pad, false},
		{"a byte over", pad + 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, env, err := EventMessage("acme", "stripe", ev(tt.pad), at)
			if err != nil {
				t.Fatal(err)
			}
			if m.Size() != MaxEventBytes+tt.pad-pad || m.Size() < len(m.Body)+len(AttrTenant+AttrEventKey+AttrConversation+AttrReceivedAt) {
				t.Fatalf("Size() = %d for a %d-byte body; want MaxEventBytes%+d, attributes counted", m.Size(), len(m.Body), tt.pad-pad)
			}
			api, s3 := &captureAPI{}, &memS3{objects: map[string][]byte{}}
			q := NewSQS(api)
			q.Offload = NewPayloads(s3, "bucket")
			if errs := q.SendBatch(context.Background(), "https://sqs/1/q.fifo", []Message{m}); errs[0] != nil {
				t.Fatalf("SendBatch() = %v", errs[0])
			}
			e := api.entries[0]
			if n := wireSize(e); n > MaxEventBytes || n != m.Size() && !tt.offloaded {
				t.Errorf("entry is %d bytes on the wire, Size() %d; want at most MaxEventBytes (%d)", n, m.Size(), MaxEventBytes)
			}
			body := aws.ToString(e.MessageBody)
			if IsPointer(body) != tt.offloaded || tt.offloaded && !bytes.Equal(s3.objects["q.fifo/"+m.DeduplicationID], m.Body) {
				t.Errorf("sent %.80s…, pointer %v; want pointer %v", body, IsPointer(body), tt.offloaded)
			}
			if got, ok := IdentityOf(received(e.MessageAttributes)); !ok || got != EnvelopeIdentity(&env) {
				t.Errorf("IdentityOf(sent) = %+v, %v; want %+v", got, ok, EnvelopeIdentity(&env))
			}
		})
	}
}
