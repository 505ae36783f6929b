package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/ratelimit"
	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// ForwardEffect is the ledger name of the built-in forward effect.
const ForwardEffect = "forward"

// outboundSource resolves a tenant's outbound credentials (a cached
// tenant.SSM.Outbound). It returns an error wrapping tenant.ErrNotFound
// when the tenant has none.
type outboundSource interface {
	Get(ctx context.Context, id string) (tenant.Outbound, error)
}

// poster delivers one signed request (forward.Client).
type poster interface {
	Post(ctx context.Context, r forward.Request) error
}

// Forward returns the built-in effect: POST the verified event body to the
// tenant's target URL, or to each of its destinations whose filter selects
// the event (as forward.Payload carries it: a body that is not JSON wrapped
// in a JSON document), once, signed with the destination's Standard
// Webhooks secrets, with webhook-id forward.MessageID(event key) and the
// effect's Idempotency-Key, within the destination's timeout (forward's
// default when unset) and the work deadline. It also sends the unsigned
// headers Hookpack-Tenant, Hookpack-Provider, Hookpack-Event-Type,
// Hookpack-Event-Id and Hookpack-Conversation for routing (a destination's
// also Hookpack-Destination; a wrapped body Hookpack-Original-Content-Type).
// Unlike Event.Once, a successful forward is recorded completed by its
// message's deletion (no write of its own) unless Config.CompleteEffects
// is set: a forward repeated after a lost deletion, a duplicate invocation
// or a redrive carries the same Idempotency-Key and webhook-id, which the
// receiver deduplicates.
//
// A legacy targetUrl is the effect "forward", the event's own record, at no
// write beyond it. Each destination is its own effect, "forward:<name>":
// delivered once, skipped when it completed, and never repeated because
// another destination failed. A message of a destination's stream
// (queue.Stream) delivers to that destination alone, the effect's record
// being its event's (deliverStream); a stream of custom effects only
// delivers nothing. A message without a stream (queued before the tenant's
// routes were written) tries every selected destination in configuration
// order and then fails with the worst outcome (permanent, transient,
// paced), holding its conversation at every destination until the failing
// one takes the event or it is dead-lettered; a replay delivers only where
// it did not complete. An event no filter selects is done (outcome
// "filtered"). A destination with a rate waits for its slot (Event.Pace's
// rules); its 429 pauses the whole destination for every invocation. Any
// 429, and any answer with a Retry-After, is a wait (ErrPaced), no
// attempt. A destination an operator or auto-pause paused gets nothing
// until it is resumed: its events wait, no attempt counted
// (deliverUnlessPaused).
//
// A tenant without outbound configuration or destinations, an unusable
// timeout, and forward's permanent errors (a 4xx answer other than
// 408/409/425/429, an untrusted TLS certificate) are permanent; an
// unreachable credential store and forward's transient errors are retried.
func Forward(tenants outboundSource, client poster) HandlerFunc {
	return func(ctx context.Context, ev *Event) error {
		out, err := tenants.Get(ctx, ev.Tenant)
		switch {
		case errors.Is(err, tenant.ErrNotFound):
			return Permanent(fmt.Errorf("%w for tenant %s", ErrNoTarget, ev.Tenant))
		case err != nil:
			return fmt.Errorf("outbound configuration of %s: %w", ev.Tenant, err)
		case out.TargetURL == "" && len(out.Destinations) == 0:
			return Permanent(fmt.Errorf("%w for tenant %s: neither targetUrl nor destinations is set", ErrNoTarget, ev.Tenant))
		}
		if ev.stream.Effects && ev.stream.Destination == "" {
			// The custom effects' stream: each destination has its own.
			ev.filtered = true
			return nil
		}
		body, err := ev.RawBody()
		if err != nil {
			return Permanent(err)
		}
		if name := ev.stream.Destination; name != "" {
			return deliverStream(ctx, ev, client, out, name, body)
		}
		if out.TargetURL != "" {
			target := out.Targets()[0]
			ev.horizon, _ = target.RetryHorizon()
			return deliver(ctx, ev, client, target, ForwardEffect, body)
		}
		if ev.eventDone {
			// An earlier message's deletion completed the event: every
			// destination it selected took it.
			ev.skipped++
			return nil
		}
		selected := out.Match(route.NewEvent(ev.Provider, ev.Type, body))
		if len(selected) == 0 {
			ev.filtered = true
			return nil
		}
		var errs []error
		for _, d := range selected {
			err := deliverUnlessPaused(ctx, ev, client, d, DestinationEffect(d.Name), body)
			if lost(err) {
				return err // a newer worker holds the message: stop
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("destination %s: %w", d.Name, err))
			}
		}
		return worst(errs)
	}
}

// deliverStream delivers a message of destination name's stream to it
// alone, under the stream's event record, when its filter selects the
// event. A destination the configuration does not hold is a transient
// failure wrapping ErrNoDestination: the worker's cached configuration
// may be older than the routes the ingest queued it by; a destination
// removed for good has it dead-lettered with that reason once its attempts
// run out.
func deliverStream(ctx context.Context, ev *Event, client poster, out tenant.Outbound, name string, body []byte) error {
	i := slices.IndexFunc(out.Destinations, func(d tenant.Destination) bool { return d.Name == name })
	if i < 0 {
		return fmt.Errorf("%w: %s (tenant %s)", ErrNoDestination, name, ev.Tenant)
	}
	d := out.Destinations[i]
	if h, err := d.RetryHorizon(); err == nil {
		ev.horizon = h
	}
	if ev.eventDone {
		ev.skipped++
		return nil
	}
	if !d.Filter.Match(route.NewEvent(ev.Provider, ev.Type, body)) {
		ev.filtered = true
		return nil
	}
	if err := deliverUnlessPaused(ctx, ev, client, d, DestinationEffect(name), body); err != nil {
		return fmt.Errorf("destination %s: %w", name, err)
	}
	return nil
}

// DestinationEffect is the ledger name of the forward to destination name.
func DestinationEffect(name string) string { return ForwardEffect + ":" + name }

// deliver runs the forward of body to d as effect name.
func deliver(ctx context.Context, ev *Event, client poster, d tenant.Destination, name string, body []byte) error {
	var timeout time.Duration
	if d.Timeout != "" {
		var err error
		if timeout, err = time.ParseDuration(d.Timeout); err != nil || timeout <= 0 {
			return Permanent(fmt.Errorf("%w for tenant %s: timeout %q is not a positive duration", ErrNoTarget, ev.Tenant, d.Timeout))
		}
	}
	lim, err := d.Limit()
	if err != nil {
		return Permanent(fmt.Errorf("%w for tenant %s: %w", ErrNoTarget, ev.Tenant, err))
	}
	rl := ratelimit.Limit{Rate: lim.PerSecond, Burst: lim.Burst}
	key := ratelimit.Key{Tenant: ev.Tenant, Name: "dest:" + d.Name}
	budget := timeout
	if budget == 0 {
		budget = forward.DefaultTimeout
	}
	headers := map[string]string{
		"Hookpack-Tenant":       ev.Tenant,
		"Hookpack-Provider":     ev.Provider,
		"Hookpack-Event-Type":   ev.Type,
		"Hookpack-Event-Id":     ev.EventID,
		"Hookpack-Conversation": ev.Conversation,
	}
	if d.Name != "" {
		headers["Hookpack-Destination"] = d.Name
	}
	paced := ev.pace != nil && !rl.Unlimited()
	if paced && !ev.completed(name) {
		// The slot first: a message that waits for the limit outside the
		// invocation has claimed nothing of the destination.
		demand := func() int { return ev.pace.demand(d.Filter.Match) }
		if err := ev.pace.take(ctx, key, rl, budget, demand); err != nil {
			return err
		}
	}
	return ev.once(ctx, name, budget, true, func(ctx context.Context, idempotencyKey string) error {
		err := client.Post(ctx, forward.Request{
			URL:            d.URL,
			ID:             forward.MessageID(ev.Key),
			IdempotencyKey: idempotencyKey,
			Body:           body,
			ContentType:    ev.Headers["content-type"],
			Secrets:        d.Secrets,
			Timeout:        timeout,
			Headers:        headers,
		})
		var fe *forward.Error
		switch {
		case !errors.As(err, &fe) || fe.Permanent():
			return err
		case paced && fe.Status == http.StatusTooManyRequests:
			// The target is past its rate: pause the destination for every
			// invocation, and wait with it (no attempt).
			until, serr := ev.pace.slow(ctx, key, rl, fe.RetryAfter())
			return RetryAfter(errors.Join(fmt.Errorf("%w: answered 429 (paused until %s)", ErrPaced, until.UTC().Format(time.RFC3339)), serr),
				max(until.Sub(ev.now()), time.Second))
		case fe.Status == http.StatusTooManyRequests || fe.RetryAfter() > 0:
			// Asked to wait: waiting is not failing (no attempt; without a
			// Retry-After the wait is a backoff of the message's receives).
			return RetryAfter(fmt.Errorf("%w: answered %d: %w", ErrPaced, fe.Status, err), fe.RetryAfter())
		}
		return err
	})
}

// worst returns the outcome of a message from its destinations' errors:
// a permanent one dead-letters it, else a transient one retries it (an
// attempt), else it waits for a rate (no attempt); the others' reasons
// are kept as text.
func worst(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	rank := func(err error) int {
		switch {
		case IsPermanent(err):
			return 0
		case !errors.Is(err, ErrPaced) && !errors.Is(err, ErrPaused):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(errs, func(a, b error) int { return rank(a) - rank(b) })
	out := errs[0]
	for _, e := range errs[1:] {
		if rank(e) == rank(errs[0]) {
			out = errors.Join(out, e)
		} else {
			out = fmt.Errorf("%w; %s", out, e.Error())
		}
	}
	return out
}
