package worker_test

import (
	"context"
	"errors"
	"strings"

	"pgregory.net/rapid"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/worker"
)

// This file holds the simulation's streams (docs/architecture.md,
// "Streams"): the ingest twin fans an event out as the ingest does, one
// message on the conversation's group for the custom effects and one per
// destination whose filter selects it on that destination's own group;
// the destinations' pauses live in destination.Memory (the worker's
// Config.Destinations, on the simulation's clock), which operators pause
// and resume as actions; and the invariants that concern them.

// streamed is the ingest's fan-out of m, e's message (ingest's streamed):
// m alone for a targetUrl, m as the one stream of a single destination,
// else an effects message and one per selecting destination
// (queue.Message.ForStream, the product's own). The model selects with
// its own rule (simDest.selects), not package route.
func (w *world) streamed(e *simEvent, m *simMsg) []*simMsg {
	if w.dests == nil {
		return []*simMsg{m}
	}
	base := queue.Message{GroupID: m.group, DeduplicationID: m.dedup, Body: []byte(m.body), Attributes: m.attrs}
	as := func(s queue.Stream) *simMsg {
		q := base.ForStream(s)
		return &simMsg{body: string(q.Body), group: q.GroupID, dedup: q.DeduplicationID, attrs: q.Attributes, event: e, from: m.from}
	}
	if len(w.dests) == 1 {
		return []*simMsg{as(queue.Stream{Destination: w.dests[0].Name, Effects: true})}
	}
	out := []*simMsg{as(queue.Stream{Effects: true})}
	for _, d := range w.dests {
		if d.selects(e) {
			out = append(out, as(queue.Stream{Destination: d.Name}))
		}
	}
	return out
}

// streamOf is m's stream as its attributes carry it (the zero Stream: a
// message that delivers to every destination, or none).
func streamOf(m *simMsg) queue.Stream {
	if m == nil {
		return queue.Stream{}
	}
	s, _ := queue.ParseStream(m.attrs[queue.AttrStream])
	if m.attrs[queue.AttrStream] == "" {
		return queue.Stream{}
	}
	return s
}

func streamName(m *simMsg) string {
	if s := streamOf(m).String(); s != "" {
		return s
	}
	return "every destination"
}

// record is the effect whose ledger record is the event's own for m: its
// destination's forward for a destination's own stream, the event's
// record otherwise (worker's eventRecord).
func record(m *simMsg) string {
	if s := streamOf(m); s.Destination != "" && !s.Effects {
		return worker.DestinationEffect(s.Destination)
	}
	return ""
}

// deadAt reports whether effect of e, run by message m, is held by a
// dead letter: the stream's own for a destination's stream message, the
// event's otherwise (a destination's dead letter never holds another's
// delivery of the same event).
func (e *simEvent) deadAt(m *simMsg, effect string) (string, bool) {
	if rec := record(m); rec != "" && rec == effect {
		r, ok := e.streamDead[rec]
		return r, ok
	}
	return e.deadReason, e.dead
}

// paused reports whether destination d is paused in the twin, and why.
func (w *world) paused(d *simDest) (destination.State, bool) {
	st, err := w.pauses.States(context.Background(), simTenant)
	if err != nil {
		w.t.Fatalf("destination states: %v", err)
	}
	s := st[d.Name]
	return s, s.IsPaused()
}

// pauseOrResume is an operator's pause of destination d, or its resume.
func (w *world) pauseOrResume(rt *rapid.T) {
	d := rapid.SampledFrom(w.dests).Draw(rt, "destination")
	if _, ok := w.paused(d); ok {
		if _, err := w.pauses.Resume(context.Background(), simTenant, d.Name); err != nil {
			w.t.Fatalf("resume %s: %v", d.Name, err)
		}
		w.logf("operator resumes destination %s", d.Name)
		return
	}
	if _, err := w.pauses.Pause(context.Background(), simTenant, d.Name, "maintenance", w.now); err != nil {
		w.t.Fatalf("pause %s: %v", d.Name, err)
	}
	w.logf("operator pauses destination %s", d.Name)
}

// resumeAll resumes every paused destination (the run's end, whose
// backlog must then drain).
func (w *world) resumeAll() {
	for _, d := range w.dests {
		if _, ok := w.paused(d); ok {
			if _, err := w.pauses.Resume(context.Background(), simTenant, d.Name); err != nil {
				w.t.Fatalf("resume %s: %v", d.Name, err)
			}
			w.logf("operator resumes destination %s", d.Name)
		}
	}
}

// checkArrival checks a request that reached destination d: a paused
// destination receives nothing.
func (w *world) checkArrival(d *simDest, e *simEvent) {
	if s, ok := w.paused(d); ok {
		w.violate("destination %s receives %s while paused (%s)", d.Name, e.id, s.Describe(w.now))
	}
}

// checkPausedDeadLetter checks a dead letter sent for src, a message of
// destination d's own stream, while d is paused: the worker made no
// attempt at d while it was paused, so the dead letter may not blame d's
// failures (attempts exhausted, its retry horizon, its answers); waiting
// ends only at the retention's end (ErrExpiring) or when its receives near
// maxReceiveCount (decide's rule, with its reason).
func (w *world) checkPausedDeadLetter(src *simMsg, e *simEvent, reason string) {
	d := w.destOf(record(src))
	if d == nil {
		return
	}
	s, ok := w.paused(d)
	if !ok || w.attempted[src.id] {
		return
	}
	if strings.HasPrefix(reason, worker.ErrDeadLettered.Error()+" (as message "+src.id+")") {
		// Its own dead letter again, decided (and checked) before: its
		// invocation ended before the message's deletion.
		return
	}
	for _, blame := range []string{"attempts:", worker.ErrHorizon.Error(), "target: "} {
		if strings.Contains(reason, blame) && !strings.Contains(reason, worker.ErrExpiring.Error()) {
			w.violate("message %s of %s (stream %s) is dead-lettered while %s is paused (%s), for its own failures: %s", src.id, e.id, streamName(src), d.Name, s.Describe(w.now), reason)
		}
	}
}

// checkStreams checks the queue's streams after every step: each message
// group holds one stream (one destination's, or the conversation's custom
// effects), so that no destination's message ever waits behind another's;
// and a destination's stream message carries its event to that
// destination only.
func (w *world) checkStreams() {
	if len(w.dests) < 2 {
		return
	}
	owner := map[string]string{}
	for _, q := range []*fifo{w.src} {
		for _, m := range q.msgs {
			if m.from != byIngest {
				continue // a hand re-send may drop its attributes
			}
			s := streamName(m)
			if o, ok := owner[m.group]; ok && o != s {
				w.violate("message %s of %s (%s) shares group %s with stream %s: one destination's message waits behind another's", m.id, eventName(m), s, m.group, o)
			}
			owner[m.group] = s
		}
	}
}

// errPausedWait reports whether err is a paused destination's wait (no
// attempt, no failure).
func errPausedWait(err error) bool {
	return errors.Is(err, worker.ErrPaused) && !worker.IsPermanent(err)
}

// resendWithoutStream makes a hand re-send in a run with streams the body
// alone (or with its size) as it is in a run without, dropping the dead
// letter's hookpack.stream; false keeps that attribute on every hand
// re-send of such a run, so that a copy without a stream arises only where
// the worker's dead letter itself has none (a body it could not read, of
// a message without its event's attributes).
const resendWithoutStream = false

// knownStreamlessCopyHole exempted the worker's hole the streams model
// found (make simulate SEED=1: 19 steps with resendWithoutStream, 6,317
// without; docs/reliability.md): a copy of an event of a tenant with two or
// more destinations that carries no hookpack.stream (the body re-sent by
// hand alone, or a dead letter whose body the worker could not read, which
// then names neither its event nor its stream) is a message for every
// destination and the custom effects. Its forwards claim records that a
// destination's stream message completed by its deletion (no write), so
// it delivers there again (the same Idempotency-Key, ev.Repeat true); and
// its dead letter marks the record the custom effects' message on the
// conversation's group shares, which that message then passes. True while
// the worker had it (each exempted run is logged and counted); the worker's
// dead letter now keeps its message's stream, and false holds it so.
const knownStreamlessCopyHole = false

// streamlessCopy reports whether m is such a copy (knownStreamlessCopyHole).
func (w *world) streamlessCopy(m *simMsg) bool {
	return knownStreamlessCopyHole && len(w.dests) >= 2 && m != nil && m.from != byIngest && streamOf(m) == (queue.Stream{})
}

// streamlessHole reports whether a run of effect of e by m breaks a rule
// only through knownStreamlessCopyHole: m is such a copy running a
// destination's forward its stream completed (why), or the dead mark m
// passes is one such a copy's dead letter set. It counts and logs it.
func (w *world) streamlessHole(e *simEvent, m *simMsg, effect, why string) bool {
	byCopy := w.streamlessCopy(m) && w.destOf(effect) != nil && strings.Contains(why, "was deleted")
	if !byCopy && !(knownStreamlessCopyHole && why == "" && e.deadByStreamless && record(m) == "") {
		return false
	}
	w.logf("    KNOWN HOLE: %s of %s runs by %s (%s) past a stream's completion or a streamless copy's dead mark", effect, e.id, msgID(m), from(m))
	if w.tally != nil {
		w.tally.known.Add(1)
	}
	return true
}

// checkHeld checks an invocation's answer: a message held behind an
// earlier one of its batch (outcome blocked) waits only behind a failure
// of its own stream, never behind another destination's (or the custom
// effects').
func (w *world) checkHeld(msgs []*simMsg, failed map[string]bool) {
	if len(w.dests) < 2 {
		return
	}
	var before []*simMsg
	for _, m := range msgs {
		if w.outcomes[m.id] == "blocked" && m.from == byIngest {
			for _, o := range before {
				if failed[o.id] && o.from == byIngest && streamName(o) != streamName(m) {
					w.fail("message %s of %s (%s) is held behind %s of %s (%s): one destination's stream waits for another's", m.id, eventName(m), streamName(m), o.id, eventName(o), streamName(o))
				}
			}
		}
		before = append(before, m)
	}
}
