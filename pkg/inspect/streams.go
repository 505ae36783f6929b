package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/worker"
)

// Deliveries counts a destination's events by the state of their
// delivery record (its effect "forward:<name>", kept
// ledger.DefaultRetention), as readEffect reads each one. An event its
// filter does not select, or that has not reached its slot yet, has no
// record: it is among the queue's messages, which SQS does not count per
// stream.
type Deliveries struct {
	// Delivered: completed (a forward's INPROGRESS record whose lease
	// ended is completed by its message's deletion).
	Delivered int `json:"delivered"`
	// Delivering: a worker holds its lease now.
	Delivering int `json:"delivering"`
	// Retrying: the destination failed it, and its message comes back
	// after a backoff. Each is the head of a conversation's stream, which
	// waits behind it: a failing conversation.
	Retrying int `json:"retrying"`
	// Waiting: its record says it waits for the destination's rate, a
	// 429's pause or an operator's pause (no attempt).
	Waiting int `json:"waiting"`
	// Dead: dead-lettered at this destination (its record DEAD).
	Dead int `json:"dead"`
}

// FailingConversation is a conversation whose head event keeps failing
// at a destination: its stream waits behind it until it is delivered or
// dead-lettered.
type FailingConversation struct {
	// Event is the head event's idempotency key, Reason its last failure.
	Event  string `json:"idempotencyKey"`
	Reason string `json:"reason,omitempty"`
	// Received is when the ingest claimed the event (its idempotency
	// record), and DeadBy when the destination's retry horizon has it
	// dead-lettered at the latest (Received + Horizon; the worker counts
	// from its message's SentTimestamp, a moment after the claim). Both
	// zero once the claim has expired.
	Received time.Time `json:"received,omitzero"`
	DeadBy   time.Time `json:"deadBy,omitzero"`
}

// StreamCount is how many listed dead letters a stream has
// (replay.Item.StreamLabel: a destination, the custom effects, or every
// destination for a message without a stream).
type StreamCount struct {
	Stream string `json:"stream"`
	Count  int    `json:"count"`
}

// SummaryOptions tune Summarize.
type SummaryOptions struct {
	// Scan lets the summary Scan the ledger (a read of the whole table)
	// for each destination's Deliveries and failing conversations.
	Scan bool
}

// waits are the reasons of a record that waits, not fails: a rate's slot
// (or a 429's pause), and a paused destination (worker.ErrPaused's text on
// main, where package destination pauses destinations).
var waits = []string{worker.ErrPaced.Error(), worker.ErrPaused.Error()}

// maxFailingReads bounds the idempotency records read to date failing
// conversations (one GetItem each).
const maxFailingReads = 50

// streamCounts counts dead by stream label, most first.
func streamCounts(dead []replay.Item) []StreamCount {
	counts := map[string]int{}
	for _, it := range dead {
		counts[it.StreamLabel()]++
	}
	var out []StreamCount
	for _, s := range byCount(counts) {
		out = append(out, StreamCount{Stream: s, Count: counts[s]})
	}
	return out
}

// deliveries counts the records of effect among recs (readEffect's states,
// a retrying one split into waiting and failing), and returns the failing
// ones' conversations, dated from their claims (at most maxFailingReads).
func (in *Inspector) deliveries(ctx context.Context, recs []ledger.Record, d Destination, q Depth, now time.Time) (Deliveries, []FailingConversation, error) {
	var n Deliveries
	var failing []FailingConversation
	for _, r := range recs {
		if r.Key.Effect != d.Effect {
			continue
		}
		e := Effect{Name: r.Key.Effect, Status: r.Status, LeaseExpires: r.LeaseExpires, DeadMessage: r.DeadMessage, Reason: r.Reason}
		switch st, _ := readEffect(e, q, false, now); {
		case st == EffectDone:
			n.Delivered++
		case st == EffectInProgress:
			n.Delivering++
		case st == EffectDead:
			n.Dead++
		case slices.ContainsFunc(waits, func(w string) bool { return strings.Contains(r.Reason, w) }):
			n.Waiting++
		default:
			n.Retrying++
			failing = append(failing, FailingConversation{Event: r.Key.Event, Reason: r.Reason})
		}
	}
	slices.SortFunc(failing, func(a, b FailingConversation) int { return strings.Compare(a.Event, b.Event) })
	for i := range failing[:min(len(failing), maxFailingReads)] {
		c, err := in.cfg.Claims.Record(ctx, failing[i].Event)
		switch {
		case errors.Is(err, idempotency.ErrNotFound):
		case err != nil:
			return n, failing, err
		default:
			failing[i].Received = c.Expires.Add(-in.cfg.Deployment.DedupRetention)
			if d.Horizon > 0 {
				failing[i].DeadBy = failing[i].Received.Add(d.Horizon)
			}
		}
	}
	return n, failing, nil
}

// heldUntil is the latest DeadBy of failing, or zero when one of them
// cannot be dated (its claim expired, or beyond maxFailingReads) or there
// are none.
func heldUntil(failing []FailingConversation) time.Time {
	var latest time.Time
	for _, f := range failing {
		if f.DeadBy.IsZero() {
			return time.Time{}
		}
		if f.DeadBy.After(latest) {
			latest = f.DeadBy
		}
	}
	return latest
}

// perStream adds to each destination of s its dead letters among dead and
// its streams' counts: s.DeadLetterStreams and, with scan (one Scan of the
// tenant's records), each one's deliveries, failing conversations, and
// when its backlog is drained at the latest while they fail.
func (in *Inspector) perStream(ctx context.Context, s *Summary, dead []replay.Item, scan bool) error {
	s.DeadLetterStreams = streamCounts(dead)
	var recs []ledger.Record
	if scan && len(s.Destinations) > 0 {
		var err error
		if recs, err = in.cfg.Ledger.Effects(ctx, s.Tenant, ""); err != nil {
			return err
		}
	}
	for i := range s.Destinations {
		p := &s.Destinations[i]
		for _, it := range dead {
			if it.Destination == p.Name {
				p.DeadLetters++
			}
		}
		if !scan {
			continue
		}
		n, failing, err := in.deliveries(ctx, recs, p.Destination, s.Queue, s.Now)
		if err != nil {
			return err
		}
		p.Deliveries, p.FailingConversations = &n, failing
		if h := heldUntil(failing); !h.IsZero() {
			p.HeldUntil = &h
			if p.DrainedBy != nil && len(failing) > 0 {
				latest := drainLatest(h, p.Backlog, p.PerSecond)
				p.DrainedLatest = &latest
			}
		}
	}
	return nil
}

// drainLatest is when backlog is drained at perSecond at the latest when
// failing conversations hold their streams until held: everything queued
// may wait behind them, and then goes at the rate.
func drainLatest(held time.Time, backlog int, perSecond float64) time.Time {
	return held.Add(time.Duration(float64(backlog) / perSecond * float64(time.Second))).Truncate(time.Second)
}

// countsText is a destination's counts for a terminal.
func countsText(d DestinationSummary) string {
	var s string
	if n := d.Deliveries; n != nil {
		s = fmt.Sprintf("delivered %d, delivering %d, retrying %d, waiting for its rate or a pause %d, dead %d (ledger records)", n.Delivered, n.Delivering, n.Retrying, n.Waiting, n.Dead)
	} else {
		s = "delivered, retrying and dead: add -scan (a Scan of the ledger table)"
	}
	s += fmt.Sprintf("; %d dead letter(s) of its stream listed", d.DeadLetters)
	return s
}

// failingText says what d's failing conversations hold, or "".
func failingText(d DestinationSummary) string {
	if len(d.FailingConversations) == 0 {
		return ""
	}
	s := fmt.Sprintf("%d conversation(s) failing here hold their streams: what waits behind each goes once it is delivered or dead-lettered", len(d.FailingConversations))
	switch {
	case d.HeldUntil != nil:
		s += ", by " + stamp(*d.HeldUntil) + " at the latest (received + its " + d.Horizon.String() + " horizon)"
	default:
		s += fmt.Sprintf(" (when, at the latest, is not known: a failing event's claim has expired, or more than %d fail)", maxFailingReads)
	}
	if d.PerSecond > 0 {
		s += "; each retry takes one of its slots"
	}
	heads := make([]string, 0, maxHeadsShown)
	for _, f := range d.FailingConversations[:min(len(d.FailingConversations), maxHeadsShown)] {
		heads = append(heads, f.Event+" ("+f.Reason+")")
	}
	if more := len(d.FailingConversations) - len(heads); more > 0 {
		heads = append(heads, fmt.Sprintf("%d more in the JSON", more))
	}
	return s + "; their heads: " + strings.Join(heads, ", ") + " (inspect one for its attempt n of N and its next attempt)"
}

// maxHeadsShown bounds the failing conversations a summary's text names.
const maxHeadsShown = 3

// ownStates sets each of j's destinations' own state of the event, from
// its effect's record (its state read) and the listed dead letters of the
// event (dead): with streams, one destination may be dead-lettered while
// another delivered it. A dead letter without a stream is every
// destination's that has a record of it and did not deliver it (one
// without a record says why it has none).
func ownStates(j *Journey, dead []replay.Item) {
	for i := range j.Destinations {
		d := &j.Destinations[i]
		if k := slices.IndexFunc(j.Effects, func(e Effect) bool { return e.Name == d.Effect }); k >= 0 {
			d.State, d.Why = j.Effects[k].State, j.Effects[k].Meaning
		}
		var newest *replay.Item
		for k := range dead {
			it := &dead[k]
			if it.EventKey == j.Key && (it.Destination == d.Name || it.Stream == "" && d.State != "" && d.State != EffectDone) &&
				(newest == nil || it.SentAt.After(newest.SentAt)) {
				newest = it
			}
		}
		if newest != nil {
			d.DeadLetter, d.State = newest, EffectDead
			d.Why = "its dead letter " + newest.MessageID + " (" + newest.StreamLabel() + "'s) is in the DLQ: " + newest.Reason
		}
	}
}

// ownStateText is destination d's line of a journey.
func ownStateText(d Destination) string {
	switch {
	case d.State != "":
		return d.Name + " " + strings.ToUpper(string(d.State)) + ": " + d.Why
	case d.Meaning != "":
		return d.Name + " " + d.Meaning
	}
	return d.Name
}
