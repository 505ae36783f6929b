package route

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const invoice = `{"id":"evt_1","type":"invoice.paid","livemode":true,
 "data":{"object":{"id":"in_1","currency":"usd","amount_paid":2000,"total":2e3,"discount":null,"customer_email":"Jo@Example.com",
  "lines":{"data":[{"price":{"id":"price_1"},"quantity":1},{"price":{"id":"price_2"},"quantity":3}]},
  "metadata":{"plan.tier":"gold"},"big":12345678901234567891}}}`

// filter decodes a filter as it is written in outbound.json.
func filter(t testing.TB, doc string) *Filter {
	t.Helper()
	var f Filter
	if err := json.Unmarshal([]byte(doc), &f); err != nil {
		t.Fatalf("filter %s: %v", doc, err)
	}
	return &f
}

func TestMatch(t *testing.T) {
	stripe := func(typ, body string) *Event { return NewEvent("stripe", typ, []byte(body)) }
	paid := func() *Event { return stripe("invoice.paid", invoice) }
	tests := []struct {
		name   string
		filter string // "" = nil filter
		ev     *Event
		want   bool
	}{
		{"no filter: every event", "", stripe("x", "not json"), true},
		{"empty filter: every event", `{}`, stripe("x", "not json"), true},
		{"type glob", `{"events":["stripe:invoice.*"]}`, paid(), true},
		{"type glob, other type", `{"events":["stripe:invoice.*"]}`, stripe("customer.created", invoice), false},
		{"exact type", `{"events":["stripe:invoice.paid"]}`, paid(), true},
		{"exact type is not a prefix", `{"events":["stripe:invoice.pai"]}`, paid(), false},
		{"other sender, same type", `{"events":["github:invoice.*"]}`, paid(), false},
		{"any of the entries", `{"events":["github:*","stripe:invoice.paid"]}`, paid(), true},
		{"sender's every type", `{"events":["stripe:*"]}`, stripe("", ""), true},
		{"* is every sender", `{"events":["*"]}`, NewEvent("github", "push", nil), true},
		{"*:pattern is every sender", `{"events":["*:push"]}`, NewEvent("gitlab", "push", nil), true},
		{"*:pattern checks the type", `{"events":["*:push"]}`, NewEvent("gitlab", "issue", nil), false},
		{"slashes in a type", `{"events":["shopify:orders/*"]}`, NewEvent("shopify", "orders/create", nil), true},
		{"colon in a type", `{"events":["twitch:channel:*"]}`, NewEvent("twitch", "channel:follow", nil), true},
		{"a sender is exact, not a glob", `{"events":["str*:*"]}`, paid(), false},
		{"entry without colon never matches", `{"events":["stripe"]}`, paid(), false},
		{"in", `{"where":[{"path":"data.object.currency","in":["eur","usd"]}]}`, paid(), true},
		{"in, absent", `{"where":[{"path":"data.object.currency","in":["eur","gbp"]}]}`, paid(), false},
		{"strings exactly", `{"where":[{"path":"data.object.customer_email","equals":"jo@example.com"}]}`, paid(), false},
		{"equals true", `{"where":[{"path":"livemode","equals":true}]}`, paid(), true},
		{"equals false", `{"where":[{"path":"livemode","equals":false}]}`, paid(), false},
		{"a string is not a boolean", `{"where":[{"path":"livemode","equals":"true"}]}`, paid(), false},
		{"number", `{"where":[{"path":"data.object.amount_paid","equals":2000}]}`, paid(), true},
		{"numbers by value", `{"where":[{"path":"data.object.total","equals":2000.0}]}`, paid(), true},
		{"numbers by value, other", `{"where":[{"path":"data.object.total","equals":2001}]}`, paid(), false},
		{"a number is not its string", `{"where":[{"path":"data.object.amount_paid","equals":"2000"}]}`, paid(), false},
		{"big numbers exactly", `{"where":[{"path":"data.object.big","equals":12345678901234567890}]}`, paid(), false},
		{"big numbers", `{"where":[{"path":"data.object.big","in":[1,12345678901234567891]}]}`, paid(), true},
		{"null", `{"where":[{"path":"data.object.discount","equals":null}]}`, paid(), true},
		{"a missing field is not null", `{"where":[{"path":"data.object.coupon","equals":null}]}`, paid(), false},
		{"exists", `{"where":[{"path":"data.object.id","exists":true}]}`, paid(), true},
		{"null exists", `{"where":[{"path":"data.object.discount","exists":true}]}`, paid(), true},
		{"exists, absent", `{"where":[{"path":"data.object.coupon","exists":true}]}`, paid(), false},
		{"exists false", `{"where":[{"path":"data.object.coupon","exists":false}]}`, paid(), true},
		{"exists false, present", `{"where":[{"path":"data.object.id","exists":false}]}`, paid(), false},
		{"array index", `{"where":[{"path":"data.object.lines.data.1.quantity","equals":3}]}`, paid(), true},
		{"array index out of range", `{"where":[{"path":"data.object.lines.data.2.quantity","exists":true}]}`, paid(), false},
		{"array needs an index", `{"where":[{"path":"data.object.lines.data.price","exists":true}]}`, paid(), false},
		{"digits are a key in an object", `{"where":[{"path":"a.0","equals":1}]}`, stripe("t", `{"a":{"0":1}}`), true},
		{"into a scalar", `{"where":[{"path":"data.object.currency.x","exists":true}]}`, paid(), false},
		{"an object equals no scalar", `{"where":[{"path":"data.object","equals":null}]}`, paid(), false},
		{"a key with a dot cannot be reached", `{"where":[{"path":"data.object.metadata.plan.tier","exists":true}]}`, paid(), false},
		{"all conditions", `{"where":[{"path":"livemode","equals":true},{"path":"data.object.currency","equals":"eur"}]}`, paid(), false},
		{"events and conditions", `{"events":["stripe:invoice.*"],"where":[{"path":"livemode","equals":true}]}`, paid(), true},
		{"events hold, conditions not", `{"events":["stripe:invoice.*"],"where":[{"path":"livemode","equals":false}]}`, paid(), false},
		{"conditions hold, events not", `{"events":["github:*"],"where":[{"path":"livemode","equals":true}]}`, paid(), false},
		{"body not JSON: conditions fail", `{"where":[{"path":"x","exists":false}]}`, stripe("t", "x=1&y=2"), false},
		{"body not JSON: events still match", `{"events":["stripe:t"]}`, stripe("t", "x=1&y=2"), true},
		{"two documents are not JSON", `{"where":[{"path":"a","exists":true}]}`, stripe("t", `{"a":1} {"a":2}`), false},
		{"no body", `{"where":[{"path":"a","exists":false}]}`, stripe("t", ""), false},
		{"a top-level array", `{"where":[{"path":"0.a","equals":1}]}`, stripe("t", `[{"a":1}]`), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f *Filter
			if tt.filter != "" {
				f = filter(t, tt.filter)
				if p := f.Check(nil); len(p) > 0 && !strings.Contains(tt.name, "never matches") {
					t.Fatalf("filter %s has problems %v", tt.filter, p)
				}
			}
			if got := f.Match(tt.ev); got != tt.want {
				t.Errorf("Match(%s, %s %s) = %v, want %v", tt.filter, tt.ev.Provider, tt.ev.Type, got, tt.want)
			}
		})
	}
}

// TestDecodeOnce: the body is decoded on the first filter with conditions
// and the decoded document serves the others; events-only filters never
// decode it.
func TestDecodeOnce(t *testing.T) {
	ev := NewEvent("stripe", "invoice.paid", []byte(invoice))
	if !filter(t, `{"events":["stripe:*"]}`).Match(ev) || ev.decoded {
		t.Fatalf("an events-only filter decoded the body (decoded = %v)", ev.decoded)
	}
	where := filter(t, `{"where":[{"path":"livemode","equals":true}]}`)
	if !where.Match(ev) || !ev.decoded {
		t.Fatal("a filter with conditions did not match, or left the body undecoded")
	}
	ev.Body = []byte(`{"livemode":false}`)
	if !where.Match(ev) {
		t.Error("the second filter decoded the body again")
	}
}

// TestMatchDeterministic: every event's answer is the same on a fresh
// event (a redelivery) and on the same event asked again.
func TestMatchDeterministic(t *testing.T) {
	filters := []*Filter{
		nil,
		filter(t, `{"events":["stripe:invoice.*","github:*"]}`),
		filter(t, `{"where":[{"path":"data.object.currency","in":["usd","eur"]},{"path":"livemode","equals":true}]}`),
		filter(t, `{"events":["*"],"where":[{"path":"data.object.lines.data.0.quantity","equals":1}]}`),
	}
	bodies := []string{invoice, "", "not json", `{"livemode":true}`, `[1,2]`}
	for _, body := range bodies {
		for _, typ := range []string{"invoice.paid", "push", ""} {
			var first []bool
			for range 3 {
				ev := NewEvent("stripe", typ, []byte(body))
				var got []bool
				for _, f := range filters {
					got = append(got, f.Match(ev), f.Match(ev))
				}
				if first == nil {
					first = got
				} else if !slices.Equal(got, first) {
					t.Errorf("Match of %q %q = %v, then %v", typ, body, first, got)
				}
			}
		}
	}
}

func TestCheck(t *testing.T) {
	unknown := func(s string) error {
		if s == "stripe" || s == "github" {
			return nil
		}
		return errors.New("unknown sender")
	}
	tests := []struct {
		name, filter string
		want         []string // "field: reason fragment"; none: no problem
	}{
		{"valid", `{"events":["stripe:invoice.*","github:*","*","*:push"],"where":[{"path":"a.b.0","in":["x",1,true,null]},{"path":"c","equals":{"a":1}}]}`,
			[]string{"where[1].equals: not a string, number, boolean or null"}},
		{"nil filter", ``, nil},
		{"no colon", `{"events":["stripe"]}`, []string{`events[0]: want "<sender>:<type pattern>"`}},
		{"no sender", `{"events":[":invoice.paid"]}`, []string{"events[0]: no sender"}},
		{"no type", `{"events":["stripe:"]}`, []string{"events[0]: no type pattern"}},
		{"space", `{"events":["stripe:invoice paid"]}`, []string{"events[0]: character 14 is a space"}},
		{"reserved", `{"events":["stripe:invoice.?"]}`, []string{"events[0]: character 15"}},
		{"bracket", `{"events":["stripe:[ab]"]}`, []string{"events[0]: character 7"}},
		{"unknown sender", `{"events":["paypal:*","stripe:*","*:x"]}`, []string{"events[0]: unknown sender"}},
		{"empty path", `{"where":[{"equals":1}]}`, []string{"where[0].path: empty"}},
		{"empty segment", `{"where":[{"path":"a..b","equals":1},{"path":".a","equals":1},{"path":"a.","equals":1}]}`,
			[]string{"where[0].path: an empty segment", "where[1].path: an empty segment", "where[2].path: an empty segment"}},
		{"space in path", `{"where":[{"path":"a b","equals":1}]}`, []string{"where[0].path: a space"}},
		{"no operator", `{"where":[{"path":"a"}]}`, []string{"where[0]: needs one of equals, in or exists"}},
		{"equals and in", `{"where":[{"path":"a","equals":1,"in":[1]}]}`, []string{"where[0]: sets more than one"}},
		{"equals and exists", `{"where":[{"path":"a","equals":null,"exists":true}]}`, []string{"where[0]: sets more than one"}},
		{"empty in", `{"where":[{"path":"a","in":[]}]}`, []string{"where[0].in: empty list"}},
		{"an array in in", `{"where":[{"path":"a","in":["x",[1]]}]}`, []string{"where[0].in[1]: not a string"}},
		{"every problem at once", `{"events":["x","stripe:"],"where":[{"path":""},{"path":"a","in":[]}]}`,
			[]string{"events[0]: want", "events[1]: no type", "where[0].path: empty", "where[0]: needs one", "where[1].in: empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f *Filter
			if tt.filter != "" {
				f = filter(t, tt.filter)
			}
			var got []string
			for _, p := range f.Check(unknown) {
				got = append(got, p.Field+": "+p.Reason)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Check(%s) = %q, want %d problems %q", tt.filter, got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("Check(%s)[%d] = %q, want %q…", tt.filter, i, got[i], w)
				}
			}
		})
	}
}

// TestValueRoundTrip: a filter written back (Parameter Store holds what
// SSM.Put marshals) reads the same, null and absent kept apart.
func TestValueRoundTrip(t *testing.T) {
	const doc = `{"events":["stripe:*"],"where":[{"path":"a","equals":null},{"path":"b","in":[1,"x"]},{"path":"c","exists":false}]}`
	f := filter(t, doc)
	if f.Where[0].Equals == nil || f.Where[1].Equals != nil {
		t.Fatalf("equals: null read as %q, absent as %q", f.Where[0].Equals, f.Where[1].Equals)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != doc {
		t.Errorf("Marshal = %s, want %s", b, doc)
	}
}

func ExampleFilter_Match() {
	var f Filter
	_ = json.Unmarshal([]byte(`{"events": ["stripe:invoice.*"],
		"where": [{"path": "data.object.currency", "in": ["usd", "eur"]}]}`), &f)
	for _, ev := range []*Event{
		NewEvent("stripe", "invoice.paid", []byte(`{"data":{"object":{"currency":"usd"}}}`)),
		NewEvent("stripe", "invoice.paid", []byte(`{"data":{"object":{"currency":"gbp"}}}`)),
		NewEvent("stripe", "customer.created", []byte(`{"data":{"object":{"currency":"usd"}}}`)),
	} {
		fmt.Println(ev.Type, f.Match(ev))
	}
	// Output:
	// invoice.paid true
	// invoice.paid false
	// customer.created false
}

// FuzzMatch: any filter and body, checked or not, matches without a panic
// and gives the same answer on a fresh event (a redelivery).
func FuzzMatch(f *testing.F) {
	f.Add(`{"events":["stripe:invoice.*"],"where":[{"path":"data.object.currency","in":["usd"]}]}`, "invoice.paid", invoice)
	f.Add(`{"where":[{"path":"a.0.b","equals":1e2},{"path":"c","exists":false}]}`, "", `{"a":[{"b":100}]}`)
	f.Add(`{"events":["*"]}`, "x", "not json")
	f.Fuzz(func(t *testing.T, filterDoc, typ, body string) {
		var flt Filter
		if json.Unmarshal([]byte(filterDoc), &flt) != nil {
			return
		}
		flt.Check(nil)
		first := flt.Match(NewEvent("stripe", typ, []byte(body)))
		if again := flt.Match(NewEvent("stripe", typ, []byte(body))); again != first {
			t.Errorf("Match(%s, %q, %q) = %v, then %v", filterDoc, typ, body, first, again)
		}
	})
}
