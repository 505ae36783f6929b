package route

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

// Filter selects the events a destination receives. A nil or empty Filter
// selects every event. Both parts must hold: the event's sender and type
// match one of Events (any, when Events is empty), and every condition of
// Where holds on its body.
type Filter struct {
	// Events are "<sender>:<type pattern>" entries: the provider name as it
	// appears in the webhook URL, a colon, and a pattern of the event type
	// in which * matches any run of characters, dots and slashes included
	// ("stripe:invoice.*", "shopify:orders/*", "github:*"). "*" alone, or
	// "*:<type pattern>", is every sender. The type is split off at the
	// first colon, so types may contain colons.
	Events []string `json:"events,omitempty"`
	// Where are conditions on the body's JSON fields, all of which must
	// hold. A body that is not a JSON document satisfies none.
	Where []Condition `json:"where,omitempty"`
}

// Condition tests one field of the body. Path is dotted keys into nested
// objects ("data.object.currency"); a segment of digits indexes an array
// when the value there is an array ("items.0.sku") and is a key otherwise.
// Exactly one of Equals, In and Exists is set. Equals and In compare JSON
// scalars (string, number, boolean, null) by JSON value: numbers
// numerically (1 equals 1.0), strings exactly (no case folding). A missing
// field equals nothing; Exists tests presence (a field holding null
// exists).
type Condition struct {
	Path   string  `json:"path"`
	Equals Value   `json:"equals,omitempty"`
	In     []Value `json:"in,omitempty"`
	Exists *bool   `json:"exists,omitempty"`
}

// Value is a JSON value as written in a condition, kept raw (null
// included: a Value is unset only when the field is absent).
type Value []byte

// UnmarshalJSON keeps b.
func (v *Value) UnmarshalJSON(b []byte) error {
	*v = append((*v)[:0], b...)
	return nil
}

// MarshalJSON returns the value as written.
func (v Value) MarshalJSON() ([]byte, error) {
	if len(v) == 0 {
		return []byte("null"), nil
	}
	return v, nil
}

// scalar decodes v: a string, json.Number, bool or nil, and false for an
// object, an array or malformed JSON.
func (v Value) scalar() (any, bool) {
	if len(v) > 0 && (v[0] == '-' || '0' <= v[0] && v[0] <= '9') {
		var n json.Number
		if err := json.Unmarshal(v, &n); err != nil {
			return nil, false
		}
		return n, true
	}
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return nil, false
	}
	switch x.(type) {
	case map[string]any, []any:
		return nil, false
	}
	return x, true
}

// A Problem is one fault of a filter. Field is its place inside the filter
// ("events[0]", "where[1].in"); Reason says what is wrong without quoting
// a value.
type Problem struct {
	Field, Reason string
}

// Check returns every problem of f: an events entry that is not
// "<sender>:<type pattern>", is empty on either side, holds a space, a
// control character or one of the reserved characters ?[]{}\ , or names a
// sender that known rejects (known may be nil: then every sender name is
// accepted; "*" is never passed to it); a condition without a path or with
// an empty segment in it, without an operator or with more than one, an
// empty In, or a compared value that is not a JSON scalar. A filter with a
// problem may never match; nil means f is usable.
func (f *Filter) Check(known func(sender string) error) []Problem {
	if f == nil {
		return nil
	}
	var out []Problem
	add := func(field, format string, args ...any) {
		out = append(out, Problem{field, fmt.Sprintf(format, args...)})
	}
	for i, e := range f.Events {
		field := fmt.Sprintf("events[%d]", i)
		sender, err := checkEvent(e)
		if err != nil {
			add(field, "%v", err)
			continue
		}
		if sender != "*" && known != nil {
			if err := known(sender); err != nil {
				add(field, "%v", err)
			}
		}
	}
	for i, c := range f.Where {
		field := fmt.Sprintf("where[%d]", i)
		if err := checkPath(c.Path); err != nil {
			add(field+".path", "%v", err)
		}
		ops := 0
		if c.Equals != nil {
			ops++
			if _, ok := c.Equals.scalar(); !ok {
				add(field+".equals", "not a string, number, boolean or null")
			}
		}
		if c.In != nil {
			ops++
			if len(c.In) == 0 {
				add(field+".in", "empty list: the condition can never hold")
			}
			for j, v := range c.In {
				if _, ok := v.scalar(); !ok {
					add(fmt.Sprintf("%s.in[%d]", field, j), "not a string, number, boolean or null")
				}
			}
		}
		if c.Exists != nil {
			ops++
		}
		switch {
		case ops == 0:
			add(field, "needs one of equals, in or exists")
		case ops > 1:
			add(field, "sets more than one of equals, in and exists")
		}
	}
	return out
}

// checkEvent returns the sender of an events entry ("*" for every one).
func checkEvent(e string) (sender string, err error) {
	if e == "*" {
		return "*", nil
	}
	if i := strings.IndexFunc(e, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune(`?[]{}\`, r) }); i >= 0 {
		return "", fmt.Errorf("character %d is a space, a control or a reserved character (?[]{}\\)", i)
	}
	sender, typ, ok := strings.Cut(e, ":")
	switch {
	case !ok:
		return "", fmt.Errorf(`want "<sender>:<type pattern>" ("stripe:invoice.*", "github:*") or "*"`)
	case sender == "":
		return "", fmt.Errorf(`no sender before the colon (every sender: "*")`)
	case typ == "":
		return "", fmt.Errorf(`no type pattern after the colon (every type: "%s:*")`, sender)
	}
	return sender, nil
}

// checkPath accepts dotted non-empty segments without spaces or control
// characters.
func checkPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty path")
	}
	if strings.IndexFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return fmt.Errorf("a space or a control character")
	}
	for _, s := range strings.Split(p, ".") {
		if s == "" {
			return fmt.Errorf("an empty segment (a leading, trailing or doubled dot)")
		}
	}
	return nil
}

// Match reports whether f selects ev. A filter with a problem (see Check)
// matches what it literally says; validation keeps such filters out of a
// tenant's configuration.
func (f *Filter) Match(ev *Event) bool {
	if f == nil {
		return true
	}
	if len(f.Events) > 0 && !f.matchEvents(ev) {
		return false
	}
	if len(f.Where) == 0 {
		return true
	}
	doc, ok := ev.document()
	if !ok {
		return false
	}
	for _, c := range f.Where {
		if !c.holds(doc) {
			return false
		}
	}
	return true
}

func (f *Filter) matchEvents(ev *Event) bool {
	for _, e := range f.Events {
		if e == "*" {
			return true
		}
		sender, typ, ok := strings.Cut(e, ":")
		if ok && (sender == "*" || sender == ev.Provider) && Glob(typ, ev.Type) {
			return true
		}
	}
	return false
}

func (c Condition) holds(doc any) bool {
	v, found := lookup(doc, c.Path)
	switch {
	case c.Exists != nil:
		return found == *c.Exists
	case !found:
		return false
	case c.Equals != nil:
		return equal(v, c.Equals)
	case c.In != nil:
		for _, w := range c.In {
			if equal(v, w) {
				return true
			}
		}
	}
	return false
}

// lookup follows path through doc.
func lookup(doc any, path string) (any, bool) {
	v := doc
	for path != "" {
		var seg string
		seg, path, _ = strings.Cut(path, ".")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return nil, false
			}
		case []any:
			i, ok := index(seg)
			if !ok || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// index parses a segment of ASCII digits as an array index.
func index(seg string) (int, bool) {
	if seg == "" || len(seg) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return 0, false
		}
		n = n*10 + int(seg[i]-'0')
	}
	return n, true
}

// equal compares a decoded body value with a condition's value as JSON
// scalars: numbers by value, the rest by type and value.
func equal(v any, w Value) bool {
	want, ok := w.scalar()
	if !ok {
		return false
	}
	switch x := v.(type) {
	case json.Number:
		y, ok := want.(json.Number)
		if !ok {
			return false
		}
		a, okA := new(big.Rat).SetString(string(x))
		b, okB := new(big.Rat).SetString(string(y))
		return okA && okB && a.Cmp(b) == 0
	case string, bool, nil:
		return v == want
	}
	return false // an object or an array is never equal to a scalar
}
