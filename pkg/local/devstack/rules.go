package devstack

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Rule steers the target service: a forward it matches is held for Hang,
// then refused with Status, or with 429 beyond Rate, instead of being
// applied. Its filters (Tenant, Event, Conversation, Marker) match what
// they name, an empty one every forward. A rule is written as the query of
// the control request that adds it (ParseRule, String):
//
//	event=4f2c1a60-0002&status=400        that event, on every attempt
//	conversation=octo/dead#1&status=422   every event of the conversation
//	status=503&times=2                    each event's first two attempts
//	hang=30s                              every forward, 30 s late
//	rate=5/s                              at most 5 forwards a second, 429 beyond
type Rule struct {
	Tenant       string
	Event        string // the forward's Hookpack-Event-Id: the eventId of the ingest's answer
	Conversation string // Hookpack-Conversation
	Marker       string // a string the forwarded body contains
	// Status refuses a matched forward (300-599); 0 refuses nothing.
	Status int
	// Times limits the rule to each event's first Times forwards (the
	// worker's attempts); 0 keeps it for every one.
	Times int
	// Hang holds the answer this long (the forward's timeout, 10 s by
	// default, may end the attempt first; the target still applies it).
	Hang time.Duration
	// Rate lets through at most Rate matched forwards per Per and refuses
	// the others with Status (429 when 0) and a Retry-After of the wait
	// until there is room.
	Rate int
	Per  time.Duration
	// RetryAfter is sent with a Status refusal without Rate (whole
	// seconds; 0: none).
	RetryAfter time.Duration
}

// The demo's markers: a forwarded body containing PoisonMarker is refused
// with 422 (permanent: the worker dead-letters it), one containing
// FlakyMarker is answered 503 on its first attempt (transient: the worker
// retries it). They are the target's built-in rules (BuiltinRules).
const (
	PoisonMarker = "hookpack-demo-poison"
	FlakyMarker  = "hookpack-demo-flaky"
)

// BuiltinRules are the rules a target starts with, and returns to on a
// reset: the demo's markers.
var BuiltinRules = []Rule{
	{Marker: PoisonMarker, Status: http.StatusUnprocessableEntity},
	{Marker: FlakyMarker, Status: http.StatusServiceUnavailable, Times: 1, RetryAfter: time.Second},
}

// ErrBadRule: a control request's query is not a rule.
var ErrBadRule = errors.New("bad rule")

// ParseRule reads a rule from a control request's query (the form in
// Rule's comment). Every parameter is checked: an unknown or repeated one,
// or a rule that does nothing, is an error wrapping ErrBadRule, so that a
// misspelt filter never becomes a rule matching every forward.
func ParseRule(q url.Values) (Rule, error) {
	var r Rule
	for k, vs := range q {
		if len(vs) != 1 {
			return r, fmt.Errorf("%w: %s given %d times", ErrBadRule, k, len(vs))
		}
		v := vs[0]
		var err error
		switch k {
		case "tenant":
			r.Tenant = v
		case "event":
			r.Event = v
		case "conversation":
			r.Conversation = v
		case "marker":
			r.Marker = v
		case "status":
			if r.Status, err = strconv.Atoi(v); err == nil && (r.Status < 300 || r.Status > 599) {
				err = errors.New("not a refusal's status (300-599)")
			}
		case "times":
			if r.Times, err = strconv.Atoi(v); err == nil && r.Times < 1 {
				err = errors.New("not a positive count")
			}
		case "hang":
			if r.Hang, err = time.ParseDuration(v); err == nil && r.Hang <= 0 {
				err = errors.New("not a positive duration such as 30s")
			}
		case "retry-after":
			if r.RetryAfter, err = time.ParseDuration(v); err == nil && (r.RetryAfter < time.Second || r.RetryAfter%time.Second != 0) {
				err = errors.New("not whole seconds such as 2s")
			}
		case "rate":
			r.Rate, r.Per, err = parseRate(v)
		default:
			return r, fmt.Errorf("%w: unknown parameter %q (tenant, event, conversation, marker, status, times, hang, rate, retry-after)", ErrBadRule, k)
		}
		if err != nil {
			return r, fmt.Errorf("%w: %s=%s: %v", ErrBadRule, k, v, err)
		}
	}
	switch {
	case r.Status == 0 && r.Hang == 0 && r.Rate == 0:
		return r, fmt.Errorf("%w: it needs status, hang or rate", ErrBadRule)
	case r.RetryAfter != 0 && (r.Status == 0 || r.Rate != 0):
		return r, fmt.Errorf("%w: retry-after goes with a status and no rate (a rate computes it)", ErrBadRule)
	}
	return r, nil
}

// parseRate reads "5/s", "30/m" or "10/2s": a count per period.
func parseRate(v string) (int, time.Duration, error) {
	n, unit, ok := strings.Cut(v, "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 1 {
		return 0, 0, errors.New("not a rate such as 5/s or 30/m")
	}
	if unit != "" && (unit[0] < '0' || unit[0] > '9') {
		unit = "1" + unit
	}
	per, err := time.ParseDuration(unit)
	if err != nil || per <= 0 {
		return 0, 0, errors.New("not a rate such as 5/s or 30/m")
	}
	return count, per, nil
}

// String is the rule as the query that adds it.
func (r Rule) String() string {
	q := url.Values{}
	set := func(k, v string, ok bool) {
		if ok {
			q.Set(k, v)
		}
	}
	set("tenant", r.Tenant, r.Tenant != "")
	set("event", r.Event, r.Event != "")
	set("conversation", r.Conversation, r.Conversation != "")
	set("marker", r.Marker, r.Marker != "")
	set("status", strconv.Itoa(r.Status), r.Status != 0)
	set("times", strconv.Itoa(r.Times), r.Times != 0)
	set("hang", r.Hang.String(), r.Hang != 0)
	set("retry-after", r.RetryAfter.String(), r.RetryAfter != 0)
	set("rate", fmt.Sprintf("%d/%s", r.Rate, r.Per), r.Rate != 0)
	return q.Encode()
}

// delivery is what the rules look at in one forwarded event.
type delivery struct {
	tenant, event, conversation string
	key                         string // Idempotency-Key: one event's forward, whatever the attempt
	body                        []byte
}

func (r Rule) matches(f delivery) bool {
	return (r.Tenant == "" || r.Tenant == f.tenant) && (r.Event == "" || r.Event == f.event) &&
		(r.Conversation == "" || r.Conversation == f.conversation) &&
		(r.Marker == "" || strings.Contains(string(f.body), r.Marker))
}

// rule is a Rule with what the target counted for it.
type rule struct {
	Rule
	id       int
	met      map[string]int // forwards matched, by Idempotency-Key (Times)
	admitted []time.Time    // forwards let through, oldest first (Rate)
}

// verdict is what the target does with a forward.
type verdict struct {
	hang       time.Duration
	status     int // a refusal; 0 applies the forward (or ignores it as a duplicate)
	retryAfter time.Duration
	refusedBy  int   // the refusing rule's id
	met        []int // the rules that matched it: their Times count it
	admitted   []int // the rate rules that let it through: their windows count it
}

// decide is the target's one decision: the rules, in order, against a
// forward arriving at now. Every rule that matches counts it and may hold
// it (the longest Hang); the first that refuses it answers: its Status, or
// beyond its Rate its Status (429 by default) with the wait until its
// window has room. decide changes nothing.
func decide(rules []*rule, f delivery, now time.Time) verdict {
	var v verdict
	for _, r := range rules {
		if !r.matches(f) || (r.Times > 0 && r.met[f.key] >= r.Times) {
			continue
		}
		v.met = append(v.met, r.id)
		v.hang = max(v.hang, r.Hang)
		if v.status != 0 {
			continue
		}
		switch recent := r.admitted[windowStart(r.admitted, now.Add(-r.Per)):]; {
		case r.Rate > 0 && len(recent) < r.Rate:
			v.admitted = append(v.admitted, r.id)
		case r.Rate > 0:
			// Room comes back when the oldest forward of the full window leaves it.
			wait := recent[len(recent)-r.Rate].Add(r.Per).Sub(now)
			v.status, v.retryAfter, v.refusedBy = cmp.Or(r.Status, http.StatusTooManyRequests), max((wait+time.Second-1).Truncate(time.Second), time.Second), r.id
		case r.Status != 0:
			v.status, v.retryAfter, v.refusedBy = r.Status, r.RetryAfter, r.id
		}
	}
	return v
}

// windowStart is the index of the first time after since.
func windowStart(times []time.Time, since time.Time) int {
	i, _ := slices.BinarySearchFunc(times, since, func(t, s time.Time) int {
		if t.After(s) {
			return 1
		}
		return -1
	})
	return i
}

// count records v in the rules it names.
func count(rules []*rule, f delivery, v verdict, now time.Time) {
	for _, r := range rules {
		if slices.Contains(v.met, r.id) && r.Times > 0 {
			r.met[f.key]++
		}
		if slices.Contains(v.admitted, r.id) {
			r.admitted = append(r.admitted[windowStart(r.admitted, now.Add(-r.Per)):], now)
		}
	}
}
