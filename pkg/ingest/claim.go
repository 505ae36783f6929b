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

// pending is one event ready to be claimed and sent: msg on its
// conversation's group, and the messages of its destinations' own streams.
type pending struct {
	id, key, validation string
	msg                 queue.Message
	streams             []queue.Message
}

// messages builds every envelope before anything is claimed, so an
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

// claimState is what claiming did for one event of a delivery.
type claimState struct {
	claim   idempotency.Claim
	claimed bool    // this delivery holds claim
	out     outcome // "" until the event is reused, duplicate, in flight, held back or accepted
	stored  string  // the payload digest a reused id was claimed with
	err     error
}

// enqueue claims every event (claim), sends the claimed ones with
// SendMessageBatch in delivery order (sending again only the entries SQS
// failed), then completes the claims of those queued and releases the
// others (settle). A conversation's events after one not claimed are held
// back (holdBack). Events queued stay queued whatever happens to the rest:
// when some event is not queued, the sender gets a retryable 503 (or 409),
// and its retry finds the queued ones duplicates and claims only the others.
func (h *Handler) enqueue(ctx context.Context, res *result, msgs []pending) {
	st := h.claim(ctx, res, msgs)
	send := holdBack(msgs, st)
	sendErrs := h.send(ctx, queue.URL(h.cfg.QueueURLTemplate, res.tenant), msgs, send)
	for _, i := range send {
		st[i].err = sendErrs[i]
	}
	h.settle(ctx, res, msgs, st)
}

// claim claims every event's key, concurrently, and returns what each claim
// did: claimed by this delivery, a duplicate, a reused id, in flight in
// another delivery (raising res.retryAfter to when its lease ends), or an
// error wrapping errUnavailable.
func (h *Handler) claim(ctx context.Context, res *result, msgs []pending) []claimState {
	st := make([]claimState, len(msgs))
	h.each(len(msgs), func(i int) {
		cctx, cancel := deadline.HalfLeft(ctx)
		defer cancel()
		st[i].claim, st[i].err = h.cfg.Claims.Claim(cctx, msgs[i].key, msgs[i].validation)
	})

	for i := range msgs {
		var ce *idempotency.ConflictError
		switch err := st[i].err; {
		case errors.As(err, &ce) && errors.Is(err, idempotency.ErrPayloadMismatch):
			st[i].out, st[i].err, st[i].stored = outReused, nil, ce.Record.Validation
		case errors.As(err, &ce) && errors.Is(err, idempotency.ErrDuplicate):
			st[i].out, st[i].err = outDuplicate, nil
		case errors.As(err, &ce):
			if ra := idempotency.RetryAfter(ce.Record, h.cfg.Now()); ra > res.retryAfter {
				res.retryAfter = ra
			}
			st[i].out, st[i].err = outInFlight, nil
		case err != nil:
			st[i].err = fmt.Errorf("%w: %w", errUnavailable, err)
		default:
			st[i].claimed = true
		}
	}
	return st
}

// settle completes the claims of the events queued and releases the other
// claims this delivery holds, then records each event's outcome in res, and
// the first error as res.err.
//
// The claims of events not queued are released with a context that
// survives the work deadline (a claim left behind would answer the
// sender's retries 409 until its lease runs out); completions use what
// is left of the work time: a failed completion only means a later
// duplicate may be enqueued again after the lease, which SQS
// deduplication (5 minutes) and the worker's effect ledger absorb, so
// the sender still gets its 2xx for a queued event.
func (h *Handler) settle(ctx context.Context, res *result, msgs []pending, st []claimState) {
	var claimed []int
	for i := range st {
		if st[i].claimed {
			claimed = append(claimed, i)
		}
	}
	h.each(len(claimed), func(j int) {
		i := claimed[j]
		if st[i].err == nil && st[i].out == "" {
			cctx, cancel := deadline.HalfLeft(ctx)
			defer cancel()
			if err := h.cfg.Claims.Complete(cctx, st[i].claim); err != nil {
				h.cfg.Logger.WarnContext(ctx, "claim completion failed after enqueue",
					slog.String("tenantId", res.tenant), slog.String("idempotencyKey", msgs[i].key), slog.String("error", err.Error()))
			}
			st[i].out = outAccepted
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.SafetyMargin*3/4)
		defer cancel()
		if err := h.cfg.Claims.Release(rctx, st[i].claim); err != nil {
			st[i].err = errors.Join(st[i].err, err)
		}
	})
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
