package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunNamesEveryProblem: every problem of the id and of both files is
// named in one run, not only the first; a valid pair passes.
func TestRunNamesEveryProblem(t *testing.T) {
	dir := t.TempDir()
	file := func(body string) string { return tempJSON(t, dir, body) }
	in := file(`{"providers":{"github":{"secrets":["s"]}}}`)
	out := file(`{"targetUrl":"https://target.example/events","secrets":["whsec_dGVzdA=="],"timeout":"10s"}`)
	dests := file(`{"destinations":[{"name":"ci","url":"https://ci.example/github","secrets":["whsec_dGVzdA=="],"rate":"600/m",
		"filter":{"events":["github:push","github:pull_*"],"where":[{"path":"repository.private","equals":false}]}},
		{"name":"audit","url":"https://audit.example/all","secrets":["whsec_dGVzdA=="],"timeout":"5s"}]}`)
	tests := []struct {
		name string
		args []string
		want []string // none: valid
	}{
		{"valid", []string{"acme", in, out}, nil},
		{"valid, inbound only", []string{"acme", in}, nil},
		{"two problems in one outbound file", []string{"acme", in, file(`{"targetUrl":"ftp://target.example","secrets":["whsec_y",""]}`)},
			[]string{"outbound.targetUrl: not an absolute http(s) URL", "outbound.secrets[1]: empty secret"}},
		{"every problem of an outbound file", []string{"acme", in, file(`{"targetUrl":"/relative","secrets":[" ",""],"timeout":"soon","retries":3,"Extra":{}}`)},
			[]string{`unknown field "retries"`, `unknown field "Extra"`, "outbound.targetUrl: not an absolute http(s) URL", "outbound.secrets[0]: empty secret",
				"outbound.secrets[1]: empty secret", "outbound.timeout: not a positive duration"}},
		{"a target without secrets", []string{"acme", in, file(`{"targetUrl":"http://user:pw@target.example"}`)},
			[]string{"outbound.targetUrl: URL must not carry user information", "outbound.secrets: a targetUrl needs at least one signing secret"}},
		{"every problem of an inbound file", []string{"acme", file(`{"providers":{"stripe":{"secret":["x"]},"paypal":{"secrets":["y"]},"hmac":{"secrets":["z"],"settings":{"base_url":"nope"}}},"tenant":"acme"}`)},
			[]string{`providers.stripe: unknown field "secret"`, `unknown field "tenant"`, "providers.stripe.secrets: at least one secret is required",
				"providers.paypal: unknown provider", "providers.hmac.settings.base_url: not an absolute http(s) URL"}},
		{"the id and both files", []string{"Acme!", file(`{"providers":{"github":{"secrets":[""]}}}`), file(`{"timeout":"-1s"}`)},
			[]string{`tenant "Acme!": invalid tenant id`, "providers.github.secrets[0]: empty secret", "outbound.timeout"}},
		{"a field of the wrong type, and the rest", []string{"acme", in, file(`{"targetUrl":"ftp://x","secrets":"whsec_y","timeout":"soon"}`)},
			[]string{"field secrets must be []string", "outbound.targetUrl", "outbound.timeout"}},
		{"valid destinations", []string{"acme", in, dests}, nil},
		{"every problem of a destinations file", []string{"acme", in, file(`{"destinations":[{"name":"ci","url":"https://a.example","secrets":["whsec_x"],"rate":"9/d",
			"filter":{"events":["github:*","stripe:invoice.*","paypal:*"],"where":[{"path":"a","in":[],"equal":1}]}},{"name":"ci","url":"https://a.example","secrets":["whsec_x"],"burst":2}]}`)},
			[]string{`destinations[0].filter.where[0]: unknown field "equal"`, "outbound.destinations[0].rate: not", `outbound.destinations[0].filter.events[1]: sender "stripe" is not enabled`,
				`outbound.destinations[0].filter.events[2]: unknown sender "paypal"`, "outbound.destinations[0].filter.where[0].in: empty list",
				"outbound.destinations[1].name: the name of destinations[0] too", "outbound.destinations[1].url: the URL of destinations[0] too",
				"outbound.destinations[1].burst: a burst needs a rate"}},
		{"syntax", []string{"acme", file(`{`)}, []string{"not valid JSON for a tenant: unexpected end"}},
		{"data after the object", []string{"acme", in, file(`{"targetUrl":"ftp://x"} {}`)},
			[]string{"data after the object", "outbound.targetUrl"}},
		{"no file", []string{"acme", filepath.Join(dir, "missing.json")}, []string{"missing.json"}},
		{"make run's tenants file", []string{filepath.Join("..", "..", "..", "events", "tenants.json")}, nil},
		{"tenants files, every problem of each", []string{
			file(`{"tenants":{"a":{"providers":{"github":{"secrets":["s"]}},"outbound":{"destinations":[{"name":"d","url":"https://d.example","secrets":["whsec_x"],"filter":{"event":["github:push"]}}]}}}}`),
			file(`{"tenants":{"b":{"providers":{"paypal":{"secrets":[""]}},"inbound":{}}}}`)},
			[]string{`tenants.a.outbound.destinations[0].filter: unknown field "event"`, `tenants.b: unknown field "inbound"`, `tenant "b": providers.paypal: unknown provider`}},
		{"a tenants file missing", []string{filepath.Join(dir, "none.json")}, []string{"none.json"}},
		{"no argument", nil, []string{"usage"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(tt.args)
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("check %v = %v, want nil", tt.args, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("check %v = nil, want %q", tt.args, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("check %v = %v\nwant %q in it", tt.args, err, w)
				}
			}
		})
	}
}

// TestRunHoldsFiltersAgainstAParsedInboundOnly: the senders of the
// outbound filters are held against the inbound file when it parsed (even
// with problems of its own), not when it did not, which would name every
// sender as not enabled.
func TestRunHoldsFiltersAgainstAParsedInboundOnly(t *testing.T) {
	dir := t.TempDir()
	out := tempJSON(t, dir, `{"destinations":[{"name":"ci","url":"https://ci.example","secrets":["whsec_dGVzdA=="],"filter":{"events":["github:*"]}}]}`)
	const notEnabled = `sender "github" is not enabled`
	if err := run([]string{"acme", tempJSON(t, dir, `{"providers":`), out}); err == nil || strings.Contains(err.Error(), notEnabled) {
		t.Errorf("check with an inbound file that does not parse = %v, want its syntax error only", err)
	}
	if err := run([]string{"acme", tempJSON(t, dir, `{"providers":{"stripe":{"secrets":["x"]}},"extra":1}`), out}); err == nil || !strings.Contains(err.Error(), notEnabled) {
		t.Errorf("check with an inbound file enabling stripe only = %v, want %q", err, notEnabled)
	}
}

// tempJSON writes body to a new file in dir and returns its path.
func tempJSON(t *testing.T, dir, body string) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "*.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(body); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return f.Name()
}

// TestRoutes: -routes prints the destinations' names and filters, and
// nothing of their URLs or secrets.
func TestRoutes(t *testing.T) {
	path := tempJSON(t, t.TempDir(), `{"destinations":[{"name":"ci","url":"https://ci.example/github","secrets":["whsec_dGVzdA=="],"rate":"600/m",
		"filter":{"events":["github:push"]}},{"name":"audit","url":"https://audit.example/all","secrets":["whsec_dGVzdA=="]}]}`)
	var b strings.Builder
	if err := routes(&b, path); err != nil {
		t.Fatal(err)
	}
	want := `{"streams":[{"name":"ci","filter":{"events":["github:push"]}},{"name":"audit"}]}` + "\n"
	if b.String() != want {
		t.Errorf("routes = %s, want %s", b.String(), want)
	}
}

// TestReceives: a tenant queue's MaxReceiveCount passes from
// worker.MinMaxReceiveCount of the core's WorkerMaxAttempts up (280 for the
// default 26), and anything below, or a value SQS refuses, fails saying
// what to set.
func TestReceives(t *testing.T) {
	tests := []struct {
		count, attempts string
		want            string // "": passes
	}{
		{"280", "26", ""},
		{"1000", "26", ""},
		{"279", "26", "MaxReceiveCount 279 is below 280, the least for the core stack's WorkerMaxAttempts 26"},
		{"200", "26", "set MAX_RECEIVE_COUNT=280 or more (at most 1000)"},
		{"50", "3", ""},
		{"49", "3", "below 50"},
		{"2", "0", ""},
		{"1000", "98", ""},
		{"1000", "99", "lower WorkerMaxAttempts to at most 98"},
		{"1", "26", "MAX_RECEIVE_COUNT=1: not a whole number from 2 to 1000"},
		{"1001", "26", "not a whole number from 2 to 1000"},
		{"many", "26", "not a whole number"},
		{"280", "", "WorkerMaxAttempts \"\" is not a whole number"},
		{"280", "-1", "is not a whole number ≥ 0"},
	}
	for _, tt := range tests {
		err := receives(tt.count, tt.attempts)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("receives(%q, %q) = %v, want %q", tt.count, tt.attempts, err, tt.want)
		}
	}
}
