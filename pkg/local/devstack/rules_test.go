package devstack

import (
	"cmp"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		query string
		want  Rule
		str   string // String(); the query itself when empty
	}{
		{"event=4f2c1a60-0002&status=400", Rule{Event: "4f2c1a60-0002", Status: 400}, ""},
		{"conversation=octo/dead%231&status=422", Rule{Conversation: "octo/dead#1", Status: 422}, "conversation=octo%2Fdead%231&status=422"},
		{"tenant=demo&status=503&times=2&retry-after=3s", Rule{Tenant: "demo", Status: 503, Times: 2, RetryAfter: 3 * time.Second}, "retry-after=3s&status=503&tenant=demo&times=2"},
		{"hang=30s", Rule{Hang: 30 * time.Second}, ""},
		{"rate=5/s", Rule{Rate: 5, Per: time.Second}, "rate=5%2F1s"},
		{"rate=30/m&status=503", Rule{Rate: 30, Per: time.Minute, Status: 503}, "rate=30%2F1m0s&status=503"},
		{"rate=10/2s", Rule{Rate: 10, Per: 2 * time.Second}, "rate=10%2F2s"},
		{"marker=hookpack-demo-poison&status=422", Rule{Marker: PoisonMarker, Status: 422}, ""},
		{"event=e1&hang=1m&status=504", Rule{Event: "e1", Hang: time.Minute, Status: 504}, "event=e1&hang=1m0s&status=504"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseRule(q)
			if err != nil || got != tt.want {
				t.Fatalf("ParseRule(%q) = %+v, %v, want %+v", tt.query, got, err, tt.want)
			}
			if want := cmp.Or(tt.str, tt.query); got.String() != want {
				t.Errorf("ParseRule(%q).String() = %q, want %q", tt.query, got.String(), want)
			}
			if again, err := ParseRule(mustQuery(t, got.String())); err != nil || again != got {
				t.Errorf("ParseRule(%q) = %+v, %v, want the rule it was written from, %+v", got.String(), again, err, got)
			}
		})
	}
	bad := []string{
		"",                             // does nothing
		"event=e1",                     // a filter alone does nothing
		"evnt=e1&status=400",           // misspelt: would refuse every event
		"event=e1&event=e2&status=400", // repeated
		"status=200", "status=299", "status=600", "status=4xx",
		"status=503&times=0", "status=503&times=-1",
		"hang=0s", "hang=-1s", "hang=30",
		"rate=5", "rate=0/s", "rate=5/x", "rate=/s", "rate=5/0s",
		"retry-after=2s",                     // without a status
		"status=503&retry-after=1500ms",      // not whole seconds
		"rate=5/s&status=503&retry-after=2s", // a rate computes it
	}
	for _, query := range bad {
		t.Run("bad "+query, func(t *testing.T) {
			if got, err := ParseRule(mustQuery(t, query)); !errors.Is(err, ErrBadRule) {
				t.Errorf("ParseRule(%q) = %+v, %v, want ErrBadRule", query, got, err)
			}
		})
	}
}

func mustQuery(t *testing.T, s string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestDecide runs each case's forwards, in order, through decide and count
// as the target does, and checks each verdict.
func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	fwd := func(tenant, event, conversation, body string) delivery {
		return delivery{tenant: tenant, event: event, conversation: conversation, key: "key-" + tenant + "-" + event, body: []byte(body)}
	}
	e1, e2 := fwd("demo", "e1", "octo/a#1", `{}`), fwd("demo", "e2", "octo/a#1", `{}`)
	e3, acme := fwd("demo", "e3", "octo/b#2", `{}`), fwd("acme", "e1", "octo/a#1", `{}`)
	poison := fwd("demo", "p1", "c", `{"note":"`+PoisonMarker+`"}`)
	flaky := fwd("demo", "f1", "c", `{"note":"`+FlakyMarker+`"}`)
	type step struct {
		f          delivery
		at         time.Duration // after t0
		status     int
		retryAfter time.Duration
		hang       time.Duration
	}
	ms := time.Millisecond
	tests := []struct {
		name  string
		rules []Rule
		steps []step
	}{
		{"no rule: applied", nil, []step{{f: e1}, {f: poison}}},
		{"the builtin rules: poison refused on every attempt, flaky on its first", BuiltinRules, []step{
			{f: poison, status: 422}, {f: poison, at: time.Second, status: 422},
			{f: flaky, status: 503, retryAfter: time.Second}, {f: flaky, at: time.Second}, {f: flaky, at: 2 * time.Second},
			{f: e1},
		}},
		{"an event, on every attempt", []Rule{{Event: "e1", Status: 400}}, []step{
			{f: e1, status: 400}, {f: e1, at: time.Minute, status: 400}, {f: e2}, {f: acme, status: 400},
		}},
		{"an event of one tenant", []Rule{{Tenant: "demo", Event: "e1", Status: 400}}, []step{{f: e1, status: 400}, {f: acme}}},
		{"a conversation", []Rule{{Conversation: "octo/a#1", Status: 422}}, []step{{f: e1, status: 422}, {f: e2, status: 422}, {f: e3}}},
		{"every forward", []Rule{{Status: 500}}, []step{{f: e1, status: 500}, {f: e3, status: 500}}},
		{"each event's first two attempts", []Rule{{Status: 503, Times: 2, RetryAfter: 2 * time.Second}}, []step{
			{f: e1, status: 503, retryAfter: 2 * time.Second}, {f: e2, status: 503, retryAfter: 2 * time.Second},
			{f: e1, status: 503, retryAfter: 2 * time.Second}, {f: e1}, {f: e1}, {f: e2, status: 503, retryAfter: 2 * time.Second}, {f: e2},
		}},
		{"a hang alone applies late", []Rule{{Hang: 30 * time.Second}}, []step{{f: e1, hang: 30 * time.Second}}},
		{"a hang, then a refusal", []Rule{{Event: "e1", Hang: time.Minute, Status: 504}}, []step{{f: e1, hang: time.Minute, status: 504}, {f: e2}}},
		{"the longest hang of the rules that match", []Rule{{Hang: time.Second}, {Conversation: "octo/a#1", Hang: 5 * time.Second}, {Event: "e9", Hang: time.Hour}},
			[]step{{f: e1, hang: 5 * time.Second}, {f: e3, hang: time.Second}}},
		{"the first refusal answers", []Rule{{Event: "e1", Status: 400}, {Conversation: "octo/a#1", Status: 422}}, []step{
			{f: e1, status: 400}, {f: e2, status: 422},
		}},
		{"a spent rule lets the next one answer", []Rule{{Event: "e1", Status: 503, Times: 1}, {Conversation: "octo/a#1", Status: 422}}, []step{
			{f: e1, status: 503}, {f: e1, status: 422},
		}},
		{"a rate of 2 a second", []Rule{{Rate: 2, Per: time.Second}}, []step{
			{f: e1}, {f: e2, at: 100 * ms},
			{f: e3, at: 200 * ms, status: 429, retryAfter: time.Second}, // room at 1000 ms: 800 ms, rounded up
			{f: e3, at: 1050 * ms}, // e1 left the window
			{f: e3, at: 1150 * ms}, // e2 too
			{f: e1, at: 1200 * ms, status: 429, retryAfter: time.Second},
			{f: e1, at: 3 * time.Second},
		}},
		{"a rate of 1 a minute, 503 beyond", []Rule{{Rate: 1, Per: time.Minute, Status: 503}}, []step{
			{f: e1}, {f: e2, at: 10 * time.Second, status: 503, retryAfter: 50 * time.Second},
			{f: e2, at: 58700 * ms, status: 503, retryAfter: 2 * time.Second}, // 1.3 s, rounded up: never early
			{f: e2, at: 59500 * ms, status: 503, retryAfter: time.Second}, {f: e2, at: time.Minute + ms},
		}},
		{"a rate of one conversation", []Rule{{Conversation: "octo/b#2", Rate: 1, Per: time.Second}}, []step{
			{f: e3}, {f: e1}, {f: e2}, {f: e3, at: 10 * ms, status: 429, retryAfter: time.Second},
		}},
		{"a refused forward uses no room of a later rate", []Rule{{Event: "e1", Status: 400}, {Rate: 1, Per: time.Second}}, []step{
			{f: e1, status: 400}, {f: e2}, {f: e3, status: 429, retryAfter: time.Second},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rules []*rule
			for i, r := range tt.rules {
				rules = append(rules, &rule{Rule: r, id: i + 1, met: map[string]int{}})
			}
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				v := decide(rules, s.f, now)
				count(rules, s.f, v, now)
				if v.status != s.status || v.retryAfter != s.retryAfter || v.hang != s.hang {
					t.Errorf("step %d: decide(%s of %s at +%s) = status %d, retry after %s, hang %s; want %d, %s, %s",
						i, s.f.event, s.f.tenant, s.at, v.status, v.retryAfter, v.hang, s.status, s.retryAfter, s.hang)
				}
			}
		})
	}
}

// TestDocumentedRules reads every rule docs/development.md adds to the
// target (a POST /control URL) and checks that the target takes it.
func TestDocumentedRules(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(awstest.ModuleRoot(), "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	urls := regexp.MustCompile(`-X POST '(http://[^']*/control\?[^']*)'`).FindAllStringSubmatch(string(doc), -1)
	if len(urls) < 5 {
		t.Fatalf("docs/development.md adds %d rules to the target, want its five examples at least", len(urls))
	}
	for _, m := range urls {
		u, err := url.Parse(m[1])
		if err != nil {
			t.Fatalf("%s: %v", m[1], err)
		}
		if _, err := ParseRule(u.Query()); err != nil {
			t.Errorf("docs/development.md: %s: %v", m[1], err)
		}
	}
}
