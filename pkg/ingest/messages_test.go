package ingest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// TestMessagesCountIdentity: every message carries its event's identity
// as attributes, and the size limit counts them, so an event ingest takes
// fits on the wire with them.
func TestMessagesCountIdentity(t *testing.T) {
	at := time.Date(2026, 11, 22, 17, 0, 0, 123456789, time.UTC) // RFC 3339 keeps all nine digits
	ev := func(pad int) webhook.Event {
		return webhook.Event{ID: "evt_1", Conversation: "cus_9", Body: []byte(`{"pad":"` + strings.Repeat("x", pad) + `"}`)}
	}
	h := New(Config{})
	small, err := h.messages("acme", "stripe", []webhook.Event{ev(0)}, at)
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
			msgs, err := h.messages("acme", "stripe", []webhook.Event{ev(tt.pad)}, at)
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
