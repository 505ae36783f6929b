package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/internal/deadline"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// pending is one event ready to be checked and sent: msg on its
// conversation's group, and the messages of its destinations' own streams.
type pending struct {
	id, key, validation string
	msg                 queue.Message
	streams             []queue.Message
}

// messages builds every envelope before any key is read, so an
// oversized or unencodable event rejects the delivery without side effects.
// Each event gets its messages for the tenant's routes (streamed).
func (h *Handler) messages(tenantID, providerName string, routes tenant.Routes, evs []webhook.Event, now time.Time) ([]pending, error) {
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: delivery holds no event", webhook.ErrMalformed)
	}
	out := make([]pending, 0, len(evs))
	for _, ev := range evs {
		m, env, err := queue.EventMessage(tenantID, providerName, ev, now)
		if err != nil {
			return nil, err
		}
		p := streamed(pending{id: env.EventID, key: env.Key, validation: webhook.Digest(ev), msg: m}, routes, route.NewEvent(providerName, ev.Type, ev.Body))
		for _, m := range append([]queue.Message{p.msg}, p.streams...) {
			if m.Size() > h.cfg.MaxEventBytes {
				return nil, fmt.Errorf("%w: event %s is %d bytes queued, the limit is %d", queue.ErrTooLarge, env.EventID, m.Size(), h.cfg.MaxEventBytes)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// streamed gives event p its messages for the tenant's routes. Without
// routes (a targetUrl, or none written) its one message is as it is: it
// delivers to every destination and runs the custom effects. With one
// stream, that message carries it (and the effects) on the conversation's
// group, where the worker applies the filter: one message, as for a
// targetUrl. With two or more, the message on the conversation's group
// runs the custom effects only, and each destination whose filter selects
// the event gets a message on its own group (queue.Message.ForStream). The
// set of groups depends on the tenant's routes, never on the event, so a
// conversation's events reach each destination in order.
func streamed(p pending, routes tenant.Routes, ev *route.Event) pending {
	switch len(routes.Streams) {
	case 0:
		return p
	case 1:
		p.msg = p.msg.ForStream(queue.Stream{Destination: routes.Streams[0].Name, Effects: true})
		return p
	}
	for _, name := range routes.Select(ev) {
		p.streams = append(p.streams, p.msg.ForStream(queue.Stream{Destination: name}))
	}
	p.msg = p.msg.ForStream(queue.Stream{Effects: true})
	return p
}

// keyState is what checking, sending and completing did for one event of
// a delivery.
type keyState struct {
	free   bool    // the key was free: this delivery sends the event
	out    outcome // "" until the event is reused, duplicate, held back or accepted
	stored string  // the payload digest a reused id was completed with
	err    error
}

// enqueue checks every event's key (check), sends those whose key is free
// with SendMessageBatch in delivery order (sending again only the entries
// SQS failed), then completes the keys of those queued (complete). A
// conversation's events after one whose check failed are held back
// (holdBack). Events queued stay queued whatever happens to the rest: when
// some event is not queued, the sender gets a retryable 503, and its retry
// finds the queued ones duplicates and sends only the others.
//
// Nothing is written before the send: a delivery that fails leaves no
// record in the way of the sender's retry, and concurrent deliveries of
// one event each send it under the same MessageDeduplicationId, which SQS
// drops for 5 minutes (a copy sent later, after a completion that failed,
// is absorbed by the worker's effect ledger, which runs an event's effects
// once whatever its copies).
func (h *Handler) enqueue(ctx context.Context, res *result, msgs []pending) {
	st := h.check(ctx, msgs)
	send := holdBack(msgs, st)
	sendErrs := h.send(ctx, queue.URL(h.cfg.QueueURLTemplate, res.tenant), msgs, send)
	for _, i := range send {
		st[i].err = sendErrs[i]
	}
	h.complete(ctx, res, msgs, st, send)
	for i, m := range msgs {
		if st[i].out == outReused {
			res.events = append(res.events, eventResult{ID: m.id, Key: m.key, Outcome: outReused, digest: m.validation, stored: st[i].stored})
		} else if st[i].out != "" {
			res.events = append(res.events, eventResult{ID: m.id, Key: m.key, Outcome: st[i].out})
		}
		if err := st[i].err; err != nil && res.err == nil {
			if !errors.Is(err, queue.ErrTooLarge) && !errors.Is(err, errUnavailable) {
				err = fmt.Errorf("%w: %w", errUnavailable, err)
			}
			res.err = err
		}
	}
}

// check reads every event's key, concurrently, and returns what each read
// found: free (this delivery sends the event), a duplicate, a reused id, or
// an error wrapping errUnavailable. A key repeated within the delivery is
// read once: its later events are duplicates of the first (reused, with
// another payload).
func (h *Handler) check(ctx context.Context, msgs []pending) []keyState {
	st := make([]keyState, len(msgs))
	first := map[string]int{} // key → its first event
	var read []int
	for i, m := range msgs {
		j, seen := first[m.key]
		switch {
		case !seen:
			first[m.key] = i
			read = append(read, i)
		case msgs[j].validation != m.validation && msgs[j].validation != "" && m.validation != "":
			st[i].out, st[i].stored = outReused, msgs[j].validation
		default:
			st[i].out = outDuplicate
		}
	}
	h.each(len(read), func(j int) {
		i := read[j]
		cctx, cancel := deadline.HalfLeft(ctx)
		defer cancel()
		st[i].err = h.cfg.Claims.Check(cctx, msgs[i].key, msgs[i].validation)
	})
	for _, i := range read {
		var ce *idempotency.ConflictError
		switch err := st[i].err; {
		case errors.As(err, &ce) && errors.Is(err, idempotency.ErrPayloadMismatch):
			st[i].out, st[i].err, st[i].stored = outReused, nil, ce.Record.Validation
		case errors.As(err, &ce) && errors.Is(err, idempotency.ErrDuplicate):
			st[i].out, st[i].err = outDuplicate, nil
		case err != nil:
			st[i].err = fmt.Errorf("%w: %w", errUnavailable, err)
		default:
			st[i].free = true
		}
	}
	return st
}

// complete records the keys of the events of sent that are queued, with
// what is left of the work time, and sets their outcome: accepted, or
// reused when another delivery completed the key first with another
// payload. That delivery sent its message under the same deduplication id
// within the same few seconds, so SQS queued one of the two bodies, the
// first to arrive; both are signed, and the record keeps the other
// delivery's digest. A failed completion only means a later duplicate is
// sent again, which SQS deduplication (5 minutes) and the worker's effect
// ledger absorb, so the sender still gets its 2xx for a queued event.
func (h *Handler) complete(ctx context.Context, res *result, msgs []pending, st []keyState, sent []int) {
	h.each(len(sent), func(j int) {
		i := sent[j]
		if st[i].err != nil {
			return
		}
		cctx, cancel := deadline.HalfLeft(ctx)
		defer cancel()
		err := h.cfg.Claims.Complete(cctx, msgs[i].key, msgs[i].validation)
		var ce *idempotency.ConflictError
		switch {
		case errors.As(err, &ce) && errors.Is(err, idempotency.ErrPayloadMismatch):
			st[i].out, st[i].stored = outReused, ce.Record.Validation
			return
		case err != nil:
			h.cfg.Logger.WarnContext(ctx, "key completion failed after enqueue",
				slog.String("tenantId", res.tenant), slog.String("idempotencyKey", msgs[i].key), slog.String("error", err.Error()))
		}
		st[i].out = outAccepted
	})
}

// each calls f(0), …, f(n-1), at most parallel at a time, and waits.
func (h *Handler) each(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}
