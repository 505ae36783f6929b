package queue

import (
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/webhook"
)

func TestStreamAttribute(t *testing.T) {
	tests := []struct {
		value string
		want  Stream
		ok    bool
	}{
		{"forward:billing", Stream{Destination: "billing"}, true},
		{"effects", Stream{Effects: true}, true},
		{"effects,forward:billing", Stream{Destination: "billing", Effects: true}, true},
		{"forward:", Stream{}, false},
		{"effects,effects", Stream{}, false},
		{"forward:a,forward:b", Stream{}, false},
		{"billing", Stream{}, false},
		{"", Stream{}, false},
	}
	for _, tt := range tests {
		got, err := ParseStream(tt.value)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseStream(%q) = %+v, %v; want %+v, ok %v", tt.value, got, err, tt.want, tt.ok)
		}
		if tt.ok && got.String() != tt.value {
			t.Errorf("ParseStream(%q).String() = %q", tt.value, got.String())
		}
	}
}

// A destination's stream has its own group and deduplication id; the
// effects (alone or with the one destination) keep the conversation's.
func TestForStream(t *testing.T) {
	m := Message{GroupID: "cus_9", DeduplicationID: "d", Attributes: map[string]string{AttrEventKey: "acme#stripe#evt_1"}}
	own := m.ForStream(Stream{Destination: "billing"})
	if own.GroupID != "cus_9|billing" || own.DeduplicationID == m.DeduplicationID || own.Attributes[AttrStream] != "forward:billing" {
		t.Errorf("ForStream(billing) = %+v", own)
	}
	if other := m.ForStream(Stream{Destination: "crm"}); other.DeduplicationID == own.DeduplicationID {
		t.Errorf("two streams share deduplication id %s", own.DeduplicationID)
	}
	for _, s := range []Stream{{Effects: true}, {Destination: "billing", Effects: true}} {
		if got := m.ForStream(s); got.GroupID != "cus_9" || got.DeduplicationID != "d" || got.Attributes[AttrStream] != s.String() {
			t.Errorf("ForStream(%+v) = %+v, want the conversation's group and id", s, got)
		}
	}
	if _, ok := m.Attributes[AttrStream]; ok {
		t.Error("ForStream changed the message's own attributes")
	}
	long := strings.Repeat("c", 121) // with "|billing", 129: over SQS's 128
	if g := StreamGroup(long, "billing"); g != webhook.GroupID(long+"|billing", "") || !strings.HasPrefix(g, "h:") || len(g) > 128 {
		t.Errorf("StreamGroup(121 characters) = %q, want the hash", g)
	}
}
