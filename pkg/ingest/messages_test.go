package ingest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// TestMessagesPerStream: an event gets one message without routes or with
// one stream (on its conversation's group), and with two or more streams
// one on the conversation's group for the custom effects plus one per
// destination whose filter selects it, each on a group and under a
// deduplication id of its own, naming its stream.
func TestMessagesPerStream(t *testing.T) {
	at := time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)
	invoices := &route.Filter{Events: []string{"stripe:invoice.*"}}
	billing := tenant.Stream{Name: "billing", Filter: invoices}
	crm, audit := tenant.Stream{Name: "crm"}, tenant.Stream{Name: "audit", Filter: &route.Filter{Events: []string{"github:*"}}}
	type want struct{ group, stream string }
	tests := []struct {
		name   string
		routes []tenant.Stream
		typ    string
		want   []want
	}{
		{"no routes", nil, "invoice.paid", []want{{"cus_9", ""}}},
		{"one stream", []tenant.Stream{billing}, "customer.created", []want{{"cus_9", "effects,forward:billing"}}},
		{"three streams, two select it", []tenant.Stream{billing, crm, audit}, "invoice.paid",
			[]want{{"cus_9", "effects"}, {"cus_9|billing", "forward:billing"}, {"cus_9|crm", "forward:crm"}}},
		{"three streams, one selects it", []tenant.Stream{billing, crm, audit}, "customer.created",
			[]want{{"cus_9", "effects"}, {"cus_9|crm", "forward:crm"}}},
	}
	h := New(Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := webhook.Event{ID: "evt_1", Type: tt.typ, Conversation: "cus_9", Body: []byte(`{}`)}
			msgs, err := h.messages("acme", "stripe", tenant.Routes{Streams: tt.routes}, []webhook.Event{ev}, at)
			if err != nil {
				t.Fatal(err)
			}
			all := append([]queue.Message{msgs[0].msg}, msgs[0].streams...)
			var got []want
			dedup := map[string]bool{}
			for _, m := range all {
				got = append(got, want{m.GroupID, m.Attributes[queue.AttrStream]})
				dedup[m.DeduplicationID] = true
				if m.Attributes[queue.AttrConversation] != "cus_9" || m.Attributes[queue.AttrEventKey] != msgs[0].key {
					t.Errorf("message of stream %q names conversation %q, event %q", m.Attributes[queue.AttrStream], m.Attributes[queue.AttrConversation], m.Attributes[queue.AttrEventKey])
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("messages (group, stream) = %v, want %v", got, tt.want)
			}
			if len(dedup) != len(all) {
				t.Errorf("%d messages share %d deduplication ids", len(all), len(dedup))
			}
		})
	}
}

// TestMessagesCountIdentity: every message carries its event's identity
// as attributes, and the size limit counts them, so an event ingest takes
// fits on the wire with them.
func TestMessagesCountIdentity(t *testing.T) {
	at := time.Date(2026, 11, 22, 17, 0, 0, 123456789, time.UTC) // RFC 3339 keeps all nine digits
	ev := func(pad int) webhook.Event {
		return webhook.Event{ID: "evt_1", Conversation: "cus_9", Body: []byte(`{"pad":"` + strings.Repeat("x", pad) + `"}`)}
	}
	h := New(Config{})
	small, err := h.messages("acme", "stripe", tenant.Routes{}, []webhook.Event{ev(0)}, at)
	if err != nil {
		t.Fatal(err)
	}
	pad := queue.MaxEventBytes - small[0].msg.Size()
	tests := []struct {
		name    string
		pad     int
		wantErr error
	}{
		{"small", 0, nil},
		{"at the limit", pad, nil},
		{"a byte over, its body alone under it", pad + 1, queue.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, err := h.messages("acme", "stripe", tenant.Routes{}, []webhook.Event{ev(tt.pad)}, at)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("messages(%d-byte pad) = %v, want %v", tt.pad, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			m := msgs[0].msg
			if m.Size() > queue.MaxEventBytes {
				t.Errorf("Size() = %d, over MaxEventBytes %d", m.Size(), queue.MaxEventBytes)
			}
			attrs := map[string]events.SQSMessageAttribute{}
			for k, v := range m.Attributes {
				attrs[k] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(v)}
			}
			id, ok := queue.IdentityOf(attrs)
			want := queue.Identity{Tenant: "acme", EventKey: msgs[0].key, Conversation: "cus_9", ReceivedAt: at}
			if !ok || id != want {
				t.Errorf("IdentityOf(message) = %+v, %v; want %+v", id, ok, want)
			}
		})
	}
	// The body alone would have fit: only the attributes push it over.
	if over, _, _ := queue.EventMessage("acme", "stripe", ev(pad+1), at); len(over.Body) > queue.MaxEventBytes {
		t.Errorf("body of the message a byte over = %d bytes; the case tests nothing", len(over.Body))
	}
}
