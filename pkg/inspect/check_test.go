package inspect_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/inspect"
)

// TestQueryCheck: every malformed part of a query is named, all at once,
// before any store is read; well-formed queries (a sender's id that holds a
// '#', a key, a hash) pass.
func TestQueryCheck(t *testing.T) {
	providers := inspect.Providers()
	tests := []struct {
		name string
		q    inspect.Query
		want []string // each in the error; none: nil
	}{
		{"sender id", inspect.Query{Tenant: "demo", Event: "4f2c1a60-0001"}, nil},
		{"key", inspect.Query{Tenant: "demo", Event: "demo#github#sha256:39a7"}, nil},
		{"key with its provider", inspect.Query{Tenant: "demo", Event: "demo#stripe#evt_1", Provider: "stripe"}, nil},
		{"a sender id holding '#'", inspect.Query{Tenant: "demo", Event: "order#12"}, nil},
		{"an id starting like no tenant", inspect.Query{Tenant: "demo", Event: "Bad#x#y"}, nil},
		{"custom effects", inspect.Query{Tenant: "demo", Event: "evt_1", Effects: []string{"mark-paid", "crm:sync"}}, nil},
		{"another tenant's key, unknown provider", inspect.Query{Tenant: "demo", Event: "bad#id#with spaces"},
			[]string{`malformed event key "bad#id#with spaces"`, "its tenant is bad, not demo", `"id" is not a provider (asana, `}},
		{"empty event id", inspect.Query{Tenant: "demo", Event: "demo#github#"},
			[]string{`malformed event key "demo#github#"`, "the event id after the second '#' is empty"}},
		{"no event", inspect.Query{Tenant: "demo"}, []string{"malformed event: no id given"}},
		{"tenant", inspect.Query{Tenant: "Bad_Tenant!", Event: "evt_1"},
			[]string{`malformed tenant id "Bad_Tenant!": only a-z, 0-9 and '-'`}},
		{"long tenant", inspect.Query{Tenant: strings.Repeat("a", 41), Event: "evt_1"}, []string{"must be 1-40 characters"}},
		{"provider", inspect.Query{Tenant: "demo", Event: "evt_1", Provider: "paypal"}, []string{`malformed -provider "paypal": not a provider`}},
		{"key of another provider", inspect.Query{Tenant: "demo", Event: "demo#github#x", Provider: "stripe"}, []string{"its provider is github, not stripe"}},
		{"effect", inspect.Query{Tenant: "demo", Event: "evt_1", Effects: []string{"mark paid"}}, []string{"malformed -effects", "only A-Z"}},
		{"every problem at once", inspect.Query{Tenant: "Bad_Tenant!", Event: "demo#nope#", Provider: "paypal", Effects: []string{""}},
			[]string{"malformed tenant id", "malformed -provider", "its tenant is demo, not Bad_Tenant!", `"nope" is not a provider`, "is empty", "malformed -effects"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.q.Check(providers)
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("%+v.Check() = %v, want nil", tt.q, err)
				}
				return
			}
			if !errors.Is(err, inspect.ErrMalformed) {
				t.Fatalf("%+v.Check() = %v, want ErrMalformed", tt.q, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%+v.Check() = %v, want it to say %q", tt.q, err, w)
				}
			}
		})
	}
}
