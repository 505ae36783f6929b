package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/replay"
)

// The summary counts each destination's events by state from the ledger
// (with a scan), its dead letters by stream from the DLQ listing, and its
// drain estimate accounts for the conversations failing there (their
// streams wait until each is delivered or dead-lettered within the
// destination's horizon).
func TestSummaryPerDestination(t *testing.T) {
	rec := func(effect, event string, st ledger.Status, lease time.Time, reason string) ledger.Record {
		return ledger.Record{Key: ledger.Key{Tenant: "acme", Event: "acme#stripe#" + event, Effect: effect}, Status: st, LeaseExpires: lease, Reason: reason, Expires: t0.Add(time.Hour)}
	}
	const pacedErr = "destination billing: waiting for the rate limit: limit dest:billing has no slot before the invocation ends"
	healthy := []ledger.Record{
		rec("forward:billing", "e1", ledger.StatusInProgress, at(-60), ""), rec("forward:billing", "e2", ledger.StatusInProgress, at(-50), ""),
		rec("forward:billing", "e3", ledger.StatusCompleted, time.Time{}, ""), rec("forward:billing", "e4", ledger.StatusInProgress, at(20), ""),
		rec("forward:billing", "e5", ledger.StatusFailed, time.Time{}, pacedErr),
		rec("forward:ci", "e6", ledger.StatusFailed, time.Time{}, "destination ci: waiting for a paused destination: paused since 2026-11-28T07:00:00Z (1h0m0s ago) by operator: maintenance"),
		rec("forward:ci", "e1", ledger.StatusDead, time.Time{}, "answered 400"), rec("forward:ci", "e2", ledger.StatusInProgress, at(-40), ""),
		rec("forward", "e1", ledger.StatusInProgress, at(-60), ""), rec("crm", "e1", ledger.StatusFailed, time.Time{}, "answered 503"),
	}
	failing := append(healthy[:len(healthy):len(healthy)],
		rec("forward:billing", "f1", ledger.StatusFailed, time.Time{}, "answered 503"), rec("forward:billing", "f2", ledger.StatusFailed, time.Time{}, "answered 503"))
	dead := []replay.Item{
		{MessageID: "d1", Destination: "ci", Stream: "forward:ci", EventKey: "acme#stripe#e1", Reason: "answered 400", SentAt: at(-30)},
		{MessageID: "d2", Stream: "effects", EventKey: "acme#stripe#e1", Reason: "crm: answered 400", SentAt: at(-30)},
		{MessageID: "d3", EventKey: "acme#stripe#e0", Reason: "answered 410", SentAt: at(-90)},
	}
	received := t0.Add(-time.Hour) // the failing events' claims
	claim := &idempotency.Record{Status: idempotency.StatusCompleted, Expires: received.Add(idempotency.DefaultRetention)}
	heldUntil := received.Add(72 * time.Hour)
	tests := []struct {
		name string
		s    stores
		scan bool
		// billing's and ci's counts, billing's estimates
		billing, ci *Deliveries
		drained     time.Time
		latest      time.Time
		failing     int
		deadLetters [3]int // billing, ci, audit
		text        []string
	}{
		{name: "without a scan: dead letters by stream only",
			s: stores{queue: [2][3]int{{1100, 80, 20}, {3, 0, 0}}, dead: dead, effects: failing, claim: claim}, drained: at(70), deadLetters: [3]int{0, 1, 0},
			text: []string{"delivered, retrying and dead: add -scan", "1 dead letter(s) of its stream listed", "1 × (custom effects)", "1 × (every destination)", "1 × ci",
				"not counted per destination: SQS counts a queue's messages, not a stream's"}},
		{name: "healthy", scan: true,
			s:       stores{queue: [2][3]int{{1100, 80, 20}, {3, 0, 0}}, dead: dead, effects: healthy, claim: claim},
			billing: &Deliveries{Delivered: 3, Delivering: 1, Waiting: 1}, ci: &Deliveries{Delivered: 1, Dead: 1, Waiting: 1}, drained: at(70), deadLetters: [3]int{0, 1, 0},
			text: []string{"delivered 3, delivering 1, retrying 0, waiting for its rate or a pause 1, dead 0 (ledger records); 0 dead letter(s) of its stream listed",
				"delivered 1, delivering 0, retrying 0, waiting for its rate or a pause 1, dead 1 (ledger records); 1 dead letter(s) of its stream listed",
				"drained by ≈ 2026-11-28T08:01:10Z (in 1m10s at 20/s, if every queued message is for it and no 429 slows it)"}},
		{name: "two conversations failing at billing", scan: true,
			s:       stores{queue: [2][3]int{{1100, 80, 20}, {3, 0, 0}}, dead: dead, effects: failing, claim: claim},
			billing: &Deliveries{Delivered: 3, Delivering: 1, Waiting: 1, Retrying: 2}, ci: &Deliveries{Delivered: 1, Dead: 1, Waiting: 1},
			drained: at(70), latest: heldUntil.Add(60 * time.Second), failing: 2, deadLetters: [3]int{0, 1, 0},
			text: []string{"retrying 2,", "drained by ≈ 2026-11-28T08:01:10Z at the earliest",
				"by 2026-12-01T07:01:00Z at the latest (all of it behind the failing conversations, then at 20/s)",
				"2 conversation(s) failing here hold their streams: what waits behind each goes once it is delivered or dead-lettered, by 2026-12-01T07:00:00Z at the latest (received + its 72h0m0s horizon); each retry takes one of its slots; their heads: acme#stripe#f1 (answered 503), acme#stripe#f2 (answered 503)"}},
		{name: "failing, their claims expired", scan: true,
			s:       stores{queue: [2][3]int{{1100, 80, 20}, {}}, effects: failing},
			billing: &Deliveries{Delivered: 3, Delivering: 1, Waiting: 1, Retrying: 2}, ci: &Deliveries{Delivered: 1, Dead: 1, Waiting: 1},
			drained: at(70), failing: 2,
			text: []string{"at the earliest", "(when, at the latest, is not known: a failing event's claim has expired, or more than 50 fail)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			in := New(Config{
				Deployment: Deployment{QueueURLTemplate: "https://q/hookpack_{tenant}.fifo"},
				Claims:     &s, Ledger: ledgerFake{&s}, Queues: &s, DeadLetters: &s, Outbound: outboundFake{out: destinationsOutbound(t)},
				Limits: limitsFake{"dest:billing": {Next: at(10), Factor: 1}}, Now: func() time.Time { return t0 },
			})
			sum, err := in.SummarizeWith(context.Background(), "acme", SummaryOptions{Scan: tt.scan})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteSummary(&out, sum); err != nil {
				t.Fatal(err)
			}
			if len(sum.Destinations) != 3 {
				t.Fatalf("Summarize() = %d destinations, want 3", len(sum.Destinations))
			}
			billing, ci := sum.Destinations[0], sum.Destinations[1]
			for _, c := range []struct {
				name      string
				got, want *Deliveries
			}{{"billing", billing.Deliveries, tt.billing}, {"ci", ci.Deliveries, tt.ci}} {
				if (c.got == nil) != (c.want == nil) || c.got != nil && *c.got != *c.want {
					t.Errorf("%s's deliveries = %+v, want %+v", c.name, c.got, c.want)
				}
			}
			if got := timeOf(billing.DrainedBy); !got.Equal(tt.drained) {
				t.Errorf("billing drained by %v, want %v", got, tt.drained)
			}
			if got := timeOf(billing.DrainedLatest); !got.Equal(tt.latest) {
				t.Errorf("billing drained at the latest by %v, want %v", got, tt.latest)
			}
			if len(billing.FailingConversations) != tt.failing {
				t.Errorf("billing has %d failing conversations, want %d", len(billing.FailingConversations), tt.failing)
			}
			if got := [3]int{billing.DeadLetters, ci.DeadLetters, sum.Destinations[2].DeadLetters}; got != tt.deadLetters {
				t.Errorf("dead letters per destination = %v, want %v", got, tt.deadLetters)
			}
			for _, w := range tt.text {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the summary lacks %q:\n%s", w, out.String())
				}
			}
			b, _ := json.Marshal(sum)
			if strings.Contains(out.String(), "SECRET") || bytes.Contains(b, []byte("SECRET")) {
				t.Errorf("the summary holds a secret:\n%s", out.String())
			}
		})
	}
}

// timeOf is *p, or zero for nil.
func timeOf(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return *p
}

// One event's journey shows each destination's own state of it: with
// streams, one destination may have dead-lettered it while another
// delivered it, and each one's dead letter is its own stream's.
func TestJourneyOwnStates(t *testing.T) {
	const key = "acme#stripe#evt_1"
	rec := func(effect string, st ledger.Status, reason string) ledger.Record {
		return ledger.Record{Key: ledger.Key{Tenant: "acme", Event: key, Effect: effect}, Status: st, LeaseExpires: at(-1), Reason: reason, DeadMessage: map[bool]string{true: "m1"}[st == ledger.StatusDead], Expires: t0.Add(time.Hour)}
	}
	claim := &idempotency.Record{Status: idempotency.StatusCompleted, Expires: t0.Add(24 * time.Hour)}
	letter := func(id, stream string, sent int) replay.Item {
		it := replay.Item{MessageID: id, GroupID: "cus_1", Stream: stream, EventKey: key, Reason: "answered 400", SentAt: at(sent)}
		if name, ok := strings.CutPrefix(stream, "forward:"); ok {
			it.Destination, it.GroupID = name, "cus_1|"+name
		}
		return it
	}
	tests := []struct {
		name  string
		s     stores
		state map[string]EffectState
		text  []string
	}{
		{"dead at billing, delivered to ci",
			stores{claim: claim, effects: []ledger.Record{rec("forward:billing", ledger.StatusDead, "answered 400"), rec("forward:ci", ledger.StatusInProgress, "")},
				queue: [2][3]int{{}, {1, 0, 0}}, dead: []replay.Item{letter("d1", "forward:billing", -30)}},
			map[string]EffectState{"billing": EffectDead, "ci": EffectDone, "audit": ""},
			[]string{"billing DEAD: its dead letter d1 (billing's) is in the DLQ: answered 400", "ci DONE: forwarded", "audit no record: not selected by its filter",
				"CONVERSATION='cus_1|billing'"}},
		{"dead at billing and at ci: each its own dead letter",
			stores{claim: claim, effects: []ledger.Record{rec("forward:billing", ledger.StatusDead, "answered 400"), rec("forward:ci", ledger.StatusDead, "answered 400")},
				queue: [2][3]int{{}, {2, 0, 0}}, dead: []replay.Item{letter("d1", "forward:billing", -30), letter("d2", "forward:ci", -20)}},
			map[string]EffectState{"billing": EffectDead, "ci": EffectDead},
			[]string{"billing DEAD: its dead letter d1 (billing's)", "ci DEAD: its dead letter d2 (ci's)",
				"billing's dead letter of it is replayed with make replay TENANT=acme CONVERSATION='cus_1|billing' ACTION=redrive"}},
		{"a dead letter without a stream: every destination's that has not delivered it",
			stores{claim: claim, effects: []ledger.Record{rec("forward", ledger.StatusDead, "answered 400"), rec("forward:billing", ledger.StatusFailed, "answered 503"), rec("forward:ci", ledger.StatusInProgress, "")},
				queue: [2][3]int{{}, {1, 0, 0}}, dead: []replay.Item{letter("d3", "", -30)}},
			map[string]EffectState{"billing": EffectDead, "ci": EffectDone, "audit": ""},
			[]string{"billing DEAD: its dead letter d3 ((every destination)'s) is in the DLQ", "ci DONE", "audit no record: not selected by its filter, or it was waiting"}},
		{"retrying at billing, delivered to ci",
			stores{claim: claim, effects: []ledger.Record{rec("forward:billing", ledger.StatusFailed, "answered 503"), rec("forward:ci", ledger.StatusInProgress, "")}, queue: [2][3]int{{1, 0, 0}, {}}},
			map[string]EffectState{"billing": EffectRetrying, "ci": EffectDone},
			[]string{"billing FAILED, RETRYING: failed; runs again when its message is received again", "ci DONE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			in := fakeInspector(&s, outboundFake{out: destinationsOutbound(t)})
			in.cfg.Deployment.ReplayCommand = "make replay TENANT={tenant} CONVERSATION={conversation} ACTION=redrive"
			js, err := in.Inspect(context.Background(), Query{Tenant: "acme", Event: key})
			if err != nil || len(js) != 1 {
				t.Fatalf("Inspect() = %d journeys, %v; want one", len(js), err)
			}
			for _, d := range js[0].Destinations {
				if want, ok := tt.state[d.Name]; ok && d.State != want {
					t.Errorf("%s: state %q (%s), want %q", d.Name, d.State, d.Why, want)
				}
			}
			var out bytes.Buffer
			if err := WriteJourney(&out, js[0]); err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", out.String())
			for _, w := range tt.text {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the journey lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// With streams, an event no destination selects leaves no record; deployed,
// the worker's filtered line is DEBUG and dropped: an empty queue says it
// is not waiting there, a queue that holds messages leaves it queued.
func TestJourneyFilteredWithoutALogLine(t *testing.T) {
	claim := &idempotency.Record{Status: idempotency.StatusCompleted, Expires: t0.Add(24 * time.Hour)}
	for _, tt := range []struct {
		name  string
		queue [2][3]int
		state State
	}{
		{"the queue is empty", [2][3]int{}, StateDone},
		{"the queue holds messages", [2][3]int{{3, 1, 0}, {}}, StateQueued},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := stores{claim: claim, queue: tt.queue}
			js, err := fakeInspector(&s, outboundFake{out: destinationsOutbound(t)}).Inspect(context.Background(), Query{Tenant: "acme", Event: "acme#stripe#evt_1"})
			if err != nil || len(js) != 1 {
				t.Fatalf("Inspect() = %d journeys, %v; want one", len(js), err)
			}
			if js[0].State != tt.state {
				t.Errorf("Inspect() = %s (%s), want %s", js[0].State, js[0].Why, tt.state)
			}
		})
	}
}
