package replay_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
)

var start = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// redrive runs a redrive of dlq into src with a clock starting at start.
func redrive(dlq *fakeDLQ, src *fakeSource, f replay.Filter) ([]replay.Item, error) {
	c := &clock{t: start, step: 10 * time.Millisecond}
	r := replay.New(dlq, src, replay.Options{Wait: -1, Now: c.Now})
	return r.Redrive(context.Background(), "https://sqs.test/q-dlq.fifo", "https://sqs.test/q.fifo", f, false)
}

// outcome is "status" or "status: note prefix" per message id.
func outcome(items []replay.Item) map[string]string {
	out := map[string]string{}
	for _, it := range items {
		if _, dup := out[it.MessageID]; dup {
			out[it.MessageID] = "visited twice"
			continue
		}
		out[it.MessageID] = it.Status
		if it.Note != "" {
			note, _, _ := strings.Cut(it.Note, " (")
			note, _, _ = strings.Cut(note, ":")
			out[it.MessageID] += ": " + note
		}
	}
	return out
}

func before(d time.Duration) time.Time { return start.Add(-d) }

func TestRedriveHoldsTheRestOfAConversation(t *testing.T) {
	tests := []struct {
		name     string
		fail     map[string]error // send failures by DLQ id
		del      map[string]error // delete failures
		wantSent []string
		want     map[string]string
		visible  []string // in the DLQ after the run
	}{
		{
			name:     "send fails",
			fail:     map[string]error{"a1": errThrottled},
			wantSent: []string{"b1"},
			want: map[string]string{"a1": "held: " + replay.NoteSendFailed, "a2": "held: " + replay.NoteBehind,
				"b1": "moved"},
			visible: []string{"a1", "a2"},
		},
		{
			name:     "delete from the DLQ fails",
			del:      map[string]error{"a1": errThrottled},
			wantSent: []string{"a1", "b1"},
			want: map[string]string{"a1": "moved: " + replay.NoteStillInDLQ, "a2": "held: " + replay.NoteBehind,
				"b1": "moved"},
			visible: []string{"a1", "a2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dlq := &fakeDLQ{failDelete: tt.del}
			dlq.add("a1", "A", "acme#hmac#1", before(time.Hour))
			dlq.add("a2", "A", "acme#hmac#2", before(time.Hour))
			dlq.add("b1", "B", "acme#hmac#3", before(time.Hour))
			src := &fakeSource{fail: func(id string) error { return tt.fail[id] }}
			items, err := redrive(dlq, src, replay.Filter{})
			if !errors.Is(err, errThrottled) {
				t.Errorf("Redrive() error = %v, want the failure", err)
			}
			if got := outcome(items); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Redrive() = %v, want %v", got, tt.want)
			}
			if !slices.Equal(src.sent, tt.wantSent) {
				t.Errorf("sent %v, want %v", src.sent, tt.wantSent)
			}
			if got := dlq.visible(); !slices.Equal(got, tt.visible) {
				t.Errorf("visible in the DLQ after the run: %v, want %v", got, tt.visible)
			}
		})
	}
}

// A message received again in the same run (its visibility ran out) is
// neither visited again nor counted as new: the run ends.
func TestRedriveDoesNotRevisitAMessage(t *testing.T) {
	dlq := &fakeDLQ{}
	dlq.add("a1", "A", "acme#hmac#1", before(time.Hour))
	dlq.afterReceive = func(q *fakeDLQ) { q.get("a1").inFlight = false }
	src := &fakeSource{}
	items, err := redrive(dlq, src, replay.Filter{Type: "order.paid"}) // a1 has no type: held
	if err != nil {
		t.Fatalf("Redrive() = %v", err)
	}
	want := map[string]string{"a1": "held: " + replay.NoteFilter}
	if got := outcome(items); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Redrive() = %v, want %v", got, want)
	}
	if dlq.receives > 3 || len(src.sent) != 0 {
		t.Errorf("%d receives, sent %v; want the run to end after the message came back, nothing sent", dlq.receives, src.sent)
	}
}

// Refused visibility changes are reported, in the error and on the item.
func TestRedriveReportsRefusedVisibilityChanges(t *testing.T) {
	dlq := &fakeDLQ{refuseVisibility: map[string]bool{"a2": true}}
	dlq.add("a1", "A", "acme#hmac#1", before(time.Hour))
	dlq.add("a2", "A", "acme#hmac#2", before(time.Hour))
	dlq.add("b1", "B", "acme#hmac#3", before(time.Hour))
	items, err := redrive(dlq, &fakeSource{}, replay.Filter{Conversation: "B"})
	if !errors.Is(err, replay.ErrNotReleased) || !strings.Contains(err.Error(), "a2 (InternalError try again)") {
		t.Errorf("Redrive() error = %v, want ErrNotReleased naming a2", err)
	}
	for _, it := range items {
		if hidden := strings.Contains(it.Note, replay.NoteStillHidden); hidden != (it.MessageID == "a2") {
			t.Errorf("item %s note = %q; want the hidden note on a2 only", it.MessageID, it.Note)
		}
	}
	if got := dlq.visible(); !slices.Equal(got, []string{"a1"}) {
		t.Errorf("visible after the run: %v, want a1 (a2 refused, b1 moved)", got)
	}
}

// Only what was dead-lettered before the run started moves; a message sent
// to the DLQ at or after the start is held and visible again afterwards.
func TestRedriveHoldsWhatWasDeadLetteredAfterTheStart(t *testing.T) {
	dlq := &fakeDLQ{}
	dlq.add("a1", "A", "acme#hmac#1", before(time.Millisecond))
	dlq.add("b1", "B", "acme#hmac#2", start)
	dlq.add("c1", "C", "acme#hmac#3", start.Add(time.Second))
	dlq.add("c2", "C", "acme#hmac#4", before(time.Hour)) // SentTimestamp out of order: behind c1 all the same
	src := &fakeSource{}
	items, err := redrive(dlq, src, replay.Filter{})
	if err != nil {
		t.Fatalf("Redrive() = %v", err)
	}
	want := map[string]string{"a1": "moved", "b1": "held: " + replay.NoteAfterStart, "c1": "held: " + replay.NoteAfterStart,
		"c2": "held: " + replay.NoteBehind}
	if got := outcome(items); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Redrive() = %v, want %v", got, want)
	}
	if !slices.Equal(src.sent, []string{"a1"}) || !slices.Equal(dlq.visible(), []string{"b1", "c1", "c2"}) {
		t.Errorf("sent %v, visible %v; want a1 sent, b1 c1 c2 visible", src.sent, dlq.visible())
	}
}

// The loop of a target that refuses an event: every moved copy is
// dead-lettered again at once under a new id. The redrive moves each event
// once and ends, whether the copy looks newer than the start, older (a
// client clock ahead of the queue's), or carries no event key.
func TestRedriveEndsWhenTheWorkerDeadLettersTheCopyAgain(t *testing.T) {
	tests := []struct {
		name    string
		sentAt  func(now time.Time) time.Time
		withKey bool
		note    string
	}{
		{"copy after the start", func(now time.Time) time.Time { return now }, true, replay.NoteAfterStart},
		{"clock ahead of the queue's", func(time.Time) time.Time { return before(time.Second) }, true, replay.NoteSameEvent},
		{"copy without an event key", func(now time.Time) time.Time { return now }, false, replay.NoteAfterStart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: start, step: 10 * time.Millisecond}
			dlq := &fakeDLQ{}
			dlq.add("a1", "A", "acme#hmac#1", before(time.Minute))
			dlq.add("b1", "B", "acme#hmac#2", before(time.Minute))
			copies := 0
			src := &fakeSource{afterSend: func(_ string, m queue.Message) {
				copies++
				key := ""
				if tt.withKey {
					key = dlq.get(m.Attributes[replay.AttrReplayOf]).key
				}
				dlq.add(fmt.Sprintf("copy%d", copies), m.GroupID, key, tt.sentAt(c.t))
			}}
			if !tt.withKey {
				for _, m := range dlq.msgs {
					m.key = ""
				}
			}
			r := replay.New(dlq, src, replay.Options{Wait: -1, Now: c.Now, Budget: time.Hour})
			items, err := r.Redrive(context.Background(), "https://sqs.test/q-dlq.fifo", "https://sqs.test/q.fifo", replay.Filter{}, false)
			if err != nil {
				t.Fatalf("Redrive() = %v", err)
			}
			if !slices.Equal(src.sent, []string{"a1", "b1"}) {
				t.Errorf("sent %v, want a1 and b1 once each", src.sent)
			}
			want := map[string]string{"a1": "moved", "b1": "moved", "copy1": "held: " + tt.note, "copy2": "held: " + tt.note}
			if got := outcome(items); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Redrive() = %v, want %v", got, want)
			}
			if got := dlq.visible(); !slices.Equal(got, []string{"copy1", "copy2"}) {
				t.Errorf("visible after the run: %v, want the two copies for a later run", got)
			}
			if dlq.receives > 4 {
				t.Errorf("%d receives, want the run to end within 4", dlq.receives)
			}
		})
	}
}

// A dry run decides as a redrive does, and moves nothing.
func TestRedriveDryRun(t *testing.T) {
	dlq := &fakeDLQ{}
	dlq.add("a1", "A", "acme#hmac#1", before(time.Hour))
	dlq.add("a2", "A", "acme#hmac#1", before(time.Hour)) // the same event twice
	dlq.add("b1", "B", "acme#hmac#2", start)
	src := &fakeSource{}
	c := &clock{t: start}
	items, err := replay.New(dlq, src, replay.Options{Wait: -1, Now: c.Now}).Redrive(context.Background(), "https://sqs.test/q-dlq.fifo", "https://sqs.test/q.fifo", replay.Filter{}, true)
	if err != nil {
		t.Fatalf("Redrive(dry run) = %v", err)
	}
	want := map[string]string{"a1": replay.StatusWouldMove, "a2": "held: " + replay.NoteSameEvent, "b1": "held: " + replay.NoteAfterStart}
	if got := outcome(items); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Redrive(dry run) = %v, want %v", got, want)
	}
	if len(src.sent) != 0 || len(dlq.visible()) != 3 {
		t.Errorf("a dry run sent %v and left %v visible; want nothing sent, all visible", src.sent, dlq.visible())
	}
}

func TestFilterEvent(t *testing.T) {
	it := replay.Item{EventKey: "acme#shopify#sha256:ab12", EventID: "orders/create:820982911946154508"}
	signed := replay.Item{EventKey: "acme#stripe#evt_123", EventID: "evt_123"}
	hashed := "msg_0123456789abcdef0123456789abcdef" // a webhook-id: no dead letter carries it
	noID := replay.Item{EventKey: "acme#stripe#evt_9"}
	tests := []struct {
		event string
		keys  []string // what inspect resolved the event to
		item  replay.Item
		want  bool
	}{
		{"acme#shopify#sha256:ab12", nil, it, true},
		{hashed, []string{"acme#stripe#evt_123"}, signed, true},
		{hashed, []string{"acme#stripe#evt_123"}, it, false},
		{hashed, nil, signed, false},
		{"", []string{"acme#stripe#evt_123"}, noID, false},
		{"", []string{"acme#stripe#evt_9"}, noID, true},
		{"sha256:ab12", nil, it, true},
		{"orders/create:820982911946154508", nil, it, true},
		{"820982911946154508", nil, it, true},
		{"82098291194615450", nil, it, false},
		{"evt_123", nil, signed, true},
		{"acme#stripe#evt_123", nil, signed, true},
		{"evt_12", nil, signed, false},
		{"other#stripe#evt_123", nil, signed, false},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			if got := (replay.Filter{Event: tt.event, Keys: tt.keys}).Match(tt.item); got != tt.want {
				t.Errorf("Filter{Event: %q, Keys: %q}.Match(%+v) = %v, want %v", tt.event, tt.keys, tt.item, got, tt.want)
			}
		})
	}
}

// New dead letters arriving all through the run (live traffic to a target
// that refuses everything) do not keep it going: a receive with nothing
// dead-lettered before the start ends it.
func TestRedriveEndsWhileNewDeadLettersArrive(t *testing.T) {
	c := &clock{t: start, step: 10 * time.Millisecond}
	dlq := &fakeDLQ{}
	dlq.add("a1", "A", "acme#hmac#1", before(time.Minute))
	n := 0
	dlq.afterReceive = func(q *fakeDLQ) {
		n++
		q.add(fmt.Sprintf("live%d", n), fmt.Sprintf("L%d", n), fmt.Sprintf("acme#hmac#live%d", n), c.t)
	}
	src := &fakeSource{}
	r := replay.New(dlq, src, replay.Options{Wait: -1, Now: c.Now, Budget: time.Hour})
	items, err := r.Redrive(context.Background(), "https://sqs.test/q-dlq.fifo", "https://sqs.test/q.fifo", replay.Filter{}, false)
	if err != nil {
		t.Fatalf("Redrive() = %v", err)
	}
	if !slices.Equal(src.sent, []string{"a1"}) || dlq.receives > 3 {
		t.Errorf("sent %v in %d receives (%d items); want a1 only, within 3 receives", src.sent, dlq.receives, len(items))
	}
}

// A receive filled with a new dead letter's group does not end the run
// while an older message waits in another group.
func TestRedriveLooksPastAReceiveOfNewOnes(t *testing.T) {
	dlq := &fakeDLQ{oneGroup: true}
	dlq.add("n1", "N", "acme#hmac#n1", start.Add(time.Second))
	dlq.add("b1", "B", "acme#hmac#b1", before(time.Minute))
	src := &fakeSource{}
	items, err := redrive(dlq, src, replay.Filter{})
	if err != nil {
		t.Fatalf("Redrive() = %v", err)
	}
	want := map[string]string{"b1": "moved", "n1": "held: " + replay.NoteAfterStart}
	if got := outcome(items); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Redrive() = %v, want %v", got, want)
	}
}

// A destination's redrive moves the dead letters of its own stream only,
// each with its stream attribute, so the worker delivers it there alone;
// the custom effects', a message without the attribute and an unreadable
// one are never in a named selection. Unfiltered, an event dead-lettered
// at two destinations moves from both.
func TestRedriveByDestination(t *testing.T) {
	fill := func() *fakeDLQ {
		q := &fakeDLQ{}
		for _, m := range []fakeMsg{
			{id: "b1", group: "A|billing", key: "k1", stream: "forward:billing"},
			{id: "c1", group: "A|ci", key: "k1", stream: "forward:ci"},
			{id: "e1", group: "A", key: "k1", stream: "effects"},
			{id: "b2", group: "A|billing", key: "k2", stream: "forward:billing"},
			{id: "l1", group: "B", key: "k3"},
			{id: "o1", group: "C", key: "k4", stream: "effects,forward:billing"},
			{id: "x1", group: "D|billing", key: "k5", stream: "forward:billing,forward:ci"},
		} {
			m.body, m.sent = "not an envelope", before(time.Minute)
			q.msgs = append(q.msgs, &m)
		}
		return q
	}
	held := "held: " + replay.NoteStream
	tests := []struct {
		name   string
		filter replay.Filter
		want   map[string]string
	}{
		{"billing", replay.Filter{Destination: "billing"},
			map[string]string{"b1": "moved", "c1": held, "e1": held, "b2": "moved", "l1": held, "o1": "moved", "x1": held}},
		{"ci", replay.Filter{Destination: "ci"},
			map[string]string{"b1": held, "c1": "moved", "e1": held, "b2": "held: " + replay.NoteBehind, "l1": held, "o1": held, "x1": held}},
		{"billing, one conversation", replay.Filter{Destination: "billing", Conversation: "C"},
			map[string]string{"b1": "held: " + replay.NoteFilter, "c1": held, "e1": held, "b2": "held: " + replay.NoteBehind, "l1": held, "o1": "moved", "x1": held}},
		{"a destination without dead letters", replay.Filter{Destination: "audit"},
			map[string]string{"b1": held, "c1": held, "e1": held, "b2": "held: " + replay.NoteBehind, "l1": held, "o1": held, "x1": held}},
		{"every stream", replay.Filter{},
			map[string]string{"b1": "moved", "c1": "moved", "e1": "moved", "b2": "moved", "l1": "moved", "o1": "moved", "x1": "moved"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dlq := fill()
			streams := map[string]string{} // DLQ id → the stream it was sent back with
			src := &fakeSource{afterSend: func(id string, m queue.Message) {
				if m.GroupID != dlq.get(id).group {
					t.Errorf("%s sent back on group %s, want %s", id, m.GroupID, dlq.get(id).group)
				}
				streams[id] = m.Attributes[queue.AttrStream]
			}}
			items, err := redrive(dlq, src, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcome(items); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Redrive(%+v) = %v, want %v", tt.filter, got, tt.want)
			}
			for id, s := range streams {
				if s != dlq.get(id).stream {
					t.Errorf("%s sent back with %s %q, want %q", id, queue.AttrStream, s, dlq.get(id).stream)
				}
			}
		})
	}
}

// Each dead letter names its stream: its destination, the custom effects,
// every destination (no attribute) or the attribute as it is.
func TestListNamesTheDestination(t *testing.T) {
	q := &fakeDLQ{}
	for _, m := range []fakeMsg{
		{id: "b1", group: "A|billing", stream: "forward:billing"},
		{id: "o1", group: "C", stream: "effects,forward:billing"},
		{id: "e1", group: "A", stream: "effects"},
		{id: "l1", group: "B"},
		{id: "x1", group: "D", stream: "forward:"},
	} {
		m.body, m.sent = "not an envelope", before(time.Minute)
		q.msgs = append(q.msgs, &m)
	}
	c := &clock{t: start, step: time.Millisecond}
	items, err := replay.New(q, nil, replay.Options{Wait: -1, Now: c.Now}).List(context.Background(), "https://sqs.test/q-dlq.fifo", replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"b1": "billing", "o1": "billing", "e1": replay.LabelEffects, "l1": replay.LabelEvery, "x1": `(hookpack.stream "forward:")`}
	for _, it := range items {
		if got := it.StreamLabel(); got != want[it.MessageID] {
			t.Errorf("%s: StreamLabel() = %q (stream %q, destination %q), want %q", it.MessageID, got, it.Stream, it.Destination, want[it.MessageID])
		}
	}
	if len(items) != len(want) {
		t.Errorf("List() = %d items, want %d", len(items), len(want))
	}
}

// A redrive given the messages a dry run listed moves those and no other,
// even one of the same conversation dead-lettered before the run started.
func TestRedriveMessages(t *testing.T) {
	dlq := &fakeDLQ{}
	dlq.add("a1", "A", "acme#hmac#a1", before(3*time.Minute))
	dlq.add("b1", "B", "acme#hmac#b1", before(2*time.Minute))
	dlq.add("b2", "B", "acme#hmac#b2", before(time.Minute))
	src := &fakeSource{}
	items, err := redrive(dlq, src, replay.Filter{Messages: []string{"a1", "b1"}})
	if err != nil {
		t.Fatalf("Redrive() = %v", err)
	}
	if !slices.Equal(src.sent, []string{"a1", "b1"}) {
		t.Errorf("Redrive(Messages a1, b1) sent %v (%v), want a1 and b1", src.sent, outcome(items))
	}
}

// Envelope reads the one dead letter it is asked for, body and headers,
// and leaves the DLQ as it was.
func TestEnvelope(t *testing.T) {
	dlq := &fakeDLQ{}
	dlq.add("a1", "A", "acme#github#d1", before(time.Minute))
	dlq.add("b1", "B", "acme#github#d2", before(time.Minute))
	env := envelope.Envelope{Version: envelope.Version, Key: "acme#github#d2", Tenant: "acme", Provider: "github", EventID: "d2",
		Headers: map[string]string{"x-github-event": "issues"}}
	env.SetBody([]byte(`{"n":2}`))
	b, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	dlq.get("b1").body = string(b)
	r := replay.New(dlq, &fakeSource{}, replay.Options{Wait: -1, Now: func() time.Time { return start }})
	got, err := r.Envelope(context.Background(), "https://sqs.test/q-dlq.fifo", "b1")
	if err != nil || got.Body != `{"n":2}` || got.Headers["x-github-event"] != "issues" || got.Key != "acme#github#d2" {
		t.Fatalf("Envelope(b1) = %+v, %v; want d2's body and headers", got, err)
	}
	if v := dlq.visible(); !slices.Equal(v, []string{"a1", "b1"}) {
		t.Errorf("after Envelope, visible %v, want a1 and b1", v)
	}
	if _, err := r.Envelope(context.Background(), "https://sqs.test/q-dlq.fifo", "c1"); !errors.Is(err, replay.ErrNotListed) {
		t.Errorf("Envelope(c1) = %v, want ErrNotListed", err)
	}
	if _, err := r.Envelope(context.Background(), "https://sqs.test/q-dlq.fifo", "a1"); !errors.Is(err, envelope.ErrInvalid) {
		t.Errorf("Envelope(a1), not an envelope, = %v, want envelope.ErrInvalid", err)
	}
}

// Each destination's dead letter of an event is its own: a redrive moves
// both, each back to its stream (its group and its hookpack.stream), while
// a second dead letter of the same event and stream is held.
func TestRedriveStreams(t *testing.T) {
	dlq := &fakeDLQ{}
	for _, m := range []struct{ id, stream string }{{"a1", "forward:a"}, {"b1", "forward:b"}, {"a2", "forward:a"}} {
		dlq.add(m.id, "c1|"+m.stream, "acme#hmac#1", before(time.Hour))
		dlq.get(m.id).stream = m.stream
	}
	streams := map[string]string{}
	src := &fakeSource{afterSend: func(id string, m queue.Message) { streams[id] = m.GroupID + " " + m.Attributes[queue.AttrStream] }}
	items, err := replay.New(dlq, src, replay.Options{Wait: -1, Now: (&clock{t: start}).Now}).Redrive(context.Background(), "https://sqs.test/q-dlq.fifo", "https://sqs.test/q.fifo", replay.Filter{}, false)
	if err != nil {
		t.Fatalf("Redrive() = %v", err)
	}
	want := map[string]string{"a1": "moved", "b1": "moved", "a2": "held: " + replay.NoteSameEvent}
	if got := outcome(items); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Redrive() = %v, want %v", got, want)
	}
	if want := map[string]string{"a1": "c1|forward:a forward:a", "b1": "c1|forward:b forward:b"}; fmt.Sprint(streams) != fmt.Sprint(want) {
		t.Errorf("sent (group stream) = %v, want %v", streams, want)
	}
}
