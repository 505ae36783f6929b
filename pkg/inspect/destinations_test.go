package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/ratelimit"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// destinationsDoc is a tenant with three destinations; its URLs and
// secrets must never be shown.
const destinationsDoc = `{"destinations": [
  {"name": "billing", "url": "https://billing.example/hooks?token=URL-SECRET", "secrets": ["whsec_BILLINGSECRET"],
   "filter": {"events": ["stripe:invoice.*"], "where": [{"path": "livemode", "equals": true}]}, "rate": "20/s", "burst": 40},
  {"name": "ci", "url": "https://ci.example/hooks", "secrets": ["whsec_CISECRET"], "filter": {"events": ["github:push"]}, "rate": "600/m"},
  {"name": "audit", "url": "https://audit.example/all", "secrets": ["whsec_AUDITSECRET"]}
]}`

type outboundFake struct {
	out tenant.Outbound
	err error
}

func (o outboundFake) Outbound(context.Context, string) (tenant.Outbound, error) { return o.out, o.err }

type limitsFake map[string]ratelimit.State

func (l limitsFake) State(_ context.Context, k ratelimit.Key, _ time.Time) (ratelimit.State, error) {
	s, ok := l[k.Name]
	if !ok {
		return ratelimit.State{}, ratelimit.ErrNotFound
	}
	return s, nil
}

func destinationsOutbound(t *testing.T) tenant.Outbound {
	t.Helper()
	var out tenant.Outbound
	if err := json.Unmarshal([]byte(destinationsDoc), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A destinations tenant's event shows each destination's effect without
// -effects: its record's state, or why it has none; filtered and paced
// read as such, in the history too.
func TestJourneyDestinations(t *testing.T) {
	const key = "acme#stripe#evt_1"
	rec := func(effect string, st ledger.Status, reason string) ledger.Record {
		return ledger.Record{Key: ledger.Key{Tenant: "acme", Event: key, Effect: effect}, Status: st, LeaseExpires: at(-1), Reason: reason, Expires: t0.Add(time.Hour)}
	}
	claim := &idempotency.Record{Status: idempotency.StatusCompleted, Expires: t0.Add(24 * time.Hour)}
	const answered429 = "waiting for the rate limit: answered 429 (paused until 2026-11-28T08:00:05Z)"
	const pacedErr = "destination billing: waiting for the rate limit: limit dest:billing has no slot before the invocation ends"
	const pausedErr = "destination billing: waiting for a paused destination: paused since 2026-11-28T07:00:00Z (1h0m0s ago) by operator: maintenance"
	tests := []struct {
		name  string
		s     stores
		state State
		text  []string
	}{
		{"delivered to billing and audit, not selected by ci",
			stores{claim: claim, effects: []ledger.Record{rec("forward", ledger.StatusInProgress, ""), rec("forward:billing", ledger.StatusInProgress, ""), rec("forward:audit", ledger.StatusInProgress, "")},
				runs: []Run{{Time: at(-10), MessageID: "m1", Outcome: "processed", ReceiveCount: 1}}},
			StateDone,
			[]string{"forward DONE: the event's own record", "forward:billing DONE: forwarded", "forward:audit DONE", `forward:ci no record: not selected by its filter (the event is done); filter ["github:push"]`,
				"looked up only the event's record, its destinations' effects:"}},
		{"filtered: no destination selects it",
			stores{claim: claim, effects: []ledger.Record{rec("forward", ledger.StatusInProgress, "")},
				runs: []Run{{Time: at(-10), MessageID: "m1", Outcome: "filtered", ReceiveCount: 1}}},
			StateDone,
			[]string{"DONE: filtered: no destination's filter selects it", "07:59:50Z filtered: no destination's filter selects it: message m1, receive 1"}},
		{"paced: waiting for billing's rate, not an attempt",
			stores{claim: claim, effects: []ledger.Record{rec("forward", ledger.StatusFailed, pacedErr), rec("forward:audit", ledger.StatusInProgress, "")}, queue: [2][3]int{{1, 0, 0}, {}},
				runs: []Run{{Time: at(-10), MessageID: "m1", Outcome: "paced", ReceiveCount: 2, Error: pacedErr}}},
			StateRetrying,
			[]string{"RETRYING: waiting for billing's rate (not an attempt): its message comes back when the slot is due",
				"forward FAILED, RETRYING: waiting for billing's rate (not an attempt); runs again when the slot is due",
				"07:59:50Z waiting for billing's rate (not an attempt): message m1, receive 2",
				"forward:billing no record: not selected by its filter, or not started yet (waiting for its rate"}},
		{"an operator paused billing: the event waits for it",
			stores{claim: claim, effects: []ledger.Record{rec("forward", ledger.StatusFailed, pausedErr), rec("forward:audit", ledger.StatusInProgress, "")}, queue: [2][3]int{{1, 0, 0}, {}},
				runs: []Run{{Time: at(-10), MessageID: "m1", Outcome: "paused", ReceiveCount: 3, Error: pausedErr}}},
			StateRetrying,
			[]string{"RETRYING: destination billing: waiting for a paused destination: paused since 2026-11-28T07:00:00Z (1h0m0s ago) by operator: maintenance (not an attempt): its message comes back to look until the destination is resumed",
				"forward FAILED, RETRYING: not an attempt; runs again once the destination is resumed",
				"07:59:50Z waiting for a paused destination (not an attempt): message m1, receive 3"}},
		{"a 429 paused billing: its effect waits for the rate",
			stores{claim: claim, effects: []ledger.Record{rec("forward", ledger.StatusFailed, "destination billing: "+answered429), rec("forward:billing", ledger.StatusFailed, answered429)}, queue: [2][3]int{{1, 0, 0}, {}}},
			StateRetrying,
			[]string{"RETRYING: waiting for billing's rate (not an attempt)", "forward:billing FAILED, RETRYING: waiting for billing's rate (not an attempt); runs again when the slot is due"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			js, err := fakeInspector(&s, outboundFake{out: destinationsOutbound(t)}).Inspect(context.Background(), Query{Tenant: "acme", Event: key})
			if err != nil || len(js) != 1 {
				t.Fatalf("Inspect() = %d journeys, %v; want one", len(js), err)
			}
			var out bytes.Buffer
			if err := WriteJourney(&out, js[0]); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(js[0])
			if js[0].State != tt.state {
				t.Errorf("Inspect() = %s (%s), want %s", js[0].State, js[0].Why, tt.state)
			}
			for _, w := range tt.text {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the output lacks %q:\n%s", w, out.String())
				}
			}
			for _, never := range []string{"SECRET", "billing.example", "audit.example"} {
				if strings.Contains(out.String(), never) || bytes.Contains(b, []byte(never)) {
					t.Errorf("the output holds %q (a URL or a secret):\n%s", never, out.String())
				}
			}
		})
	}
}

// An outbound configuration that cannot be read is a note: the stores
// still answer.
func TestJourneyOutboundUnreadable(t *testing.T) {
	s := stores{claim: &idempotency.Record{Status: idempotency.StatusCompleted, Expires: t0.Add(time.Hour)}}
	js, err := fakeInspector(&s, outboundFake{err: errors.New("AccessDeniedException")}).Inspect(context.Background(), Query{Tenant: "acme", Event: "acme#stripe#evt_1"})
	if err != nil || !strings.Contains(strings.Join(js[0].Notes, "\n"), "destinations could not be read") {
		t.Errorf("Inspect() = %+v, %v; want the journey with a note", js, err)
	}
}

// The summary shows each destination's rate, its limiter and when the
// tenant's backlog drains at its rate.
func TestSummaryDestinations(t *testing.T) {
	s := stores{queue: [2][3]int{{1100, 80, 20}, {}}}
	limits := limitsFake{
		// billing: a 429 paused it until 08:00:05, at half its rate.
		"dest:billing": {Next: at(10), Factor: 0.5, Strikes: 1, Penalty: at(5)},
	}
	in := New(Config{
		Deployment: Deployment{QueueURLTemplate: "https://q/hookpack_{tenant}.fifo"},
		Queues:     &s, DeadLetters: &s, Outbound: outboundFake{out: destinationsOutbound(t)}, Limits: limits, Now: func() time.Time { return t0 },
		Pauses: pausesFake{"audit": {
			Paused:  destination.Pause{Since: at(-3600), Reason: "no success for 6h0m0s: target unavailable: answered 503", By: destination.Auto},
			Failing: destination.Failing{Since: at(-7 * 3600), Reason: "target unavailable: answered 503"},
		}, "ci": {Failing: destination.Failing{Since: at(-60), Reason: "target unavailable: timed out"}}},
	})
	sum, err := in.Summarize(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteSummary(&out, sum); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	if len(sum.Destinations) != 3 {
		t.Fatalf("Summarize() = %d destinations, want 3", len(sum.Destinations))
	}
	// 1200 queued at 20/s from the next slot (08:00:10): 60 s later.
	if d := sum.Destinations[0].DrainedBy; d == nil || !d.Equal(at(70)) {
		t.Errorf("billing drained by %v, want %v", d, at(70))
	}
	// ci is idle: from now, 1200 at 10/s.
	if d := sum.Destinations[1].DrainedBy; d == nil || !d.Equal(at(120)) || !sum.Destinations[1].Limiter.Idle {
		t.Errorf("ci drained by %v (limiter %+v), want %v, idle", d, sum.Destinations[1].Limiter, at(120))
	}
	if sum.Destinations[2].Limiter != nil || sum.Destinations[2].DrainedBy != nil || sum.Destinations[2].Paused == nil {
		t.Errorf("audit = %+v, want paused, no limiter and no estimate (no rate)", sum.Destinations[2])
	}
	for _, w := range []string{
		"billing: 20/s, burst 40, filter [\"stripe:invoice.*\"] where 1 condition(s) hold; limiter: next slot 2026-11-28T08:00:10Z, paused by a 429 until 2026-11-28T08:00:05Z, at 50% of its rate after 429s (back to 100% within 30 s without one), 1 of them in a row without Retry-After (each pause twice the last)",
		"backlog 1200 queued for the tenant: drained by ≈ 2026-11-28T08:01:10Z (in 1m10s at 20/s, if every queued message is for it and no 429 slows it)",
		"limiter idle (unused for the last hour: its burst is ready); backlog 1200 queued for the tenant: drained by ≈ 2026-11-28T08:02:00Z (in 2m0s at 600/m",
		"ci: 600/m, burst 10, filter [\"github:push\"]; failing since 2026-11-28T07:59:00Z (1m0s) without a success: target unavailable: timed out; limiter idle",
		"audit: paused since 2026-11-28T07:00:00Z (1h0m0s ago) by auto: no success for 6h0m0s: target unavailable: answered 503; its events wait (backlog 1200 queued for the tenant) until it is resumed",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the summary lacks %q:\n%s", w, out.String())
		}
	}
	if strings.Contains(out.String(), "SECRET") || strings.Contains(out.String(), "example") {
		t.Errorf("the summary holds a URL or a secret:\n%s", out.String())
	}
}

// pausesFake answers States with its destinations' states.
type pausesFake destination.States

func (p pausesFake) States(context.Context, string) (destination.States, error) {
	return destination.States(p), nil
}

func TestPacedFor(t *testing.T) {
	for _, tt := range []struct{ err, want string }{
		{"destination billing: waiting for the rate limit: limit dest:billing has no slot before the invocation ends", "billing"},
		{"waiting for the rate limit: limit dest:ci has no slot", "ci"},
		{"destination a-1: waiting for the rate limit: answered 429; destination b: waiting for the rate limit", "a-1,b"},
		{"waiting for the rate limit: limit crm has no slot", ""},
	} {
		if got := strings.Join(pacedFor(tt.err), ","); got != tt.want {
			t.Errorf("pacedFor(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
