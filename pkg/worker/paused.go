package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// destinationStates are the destinations' shared states
// (destination.Cache over destination.DynamoDB): read per tenant, written
// only when a streak of failures starts or ends or auto-pauses.
type destinationStates interface {
	States(ctx context.Context, tenantID string) (destination.States, error)
	Failed(ctx context.Context, tenantID, name, reason string, now time.Time, after time.Duration, seen destination.State) (destination.State, error)
	Recovered(ctx context.Context, tenantID, name string, now time.Time, seen destination.State) (destination.State, error)
}

// DefaultAutoPause is how long a destination fails without a single
// success before the worker pauses it (Config.AutoPause).
const DefaultAutoPause = 6 * time.Hour

// pauses is one invocation's view of the destinations' states: each
// tenant's read at most once, whatever the number of its messages.
type pauses struct {
	src   destinationStates
	now   func() time.Time
	after time.Duration
	poll  time.Duration // Config.PausePoll

	mu     sync.Mutex
	states map[string]destination.States
	errs   map[string]error
}

func (h *Handler) newPauses() *pauses {
	if h.cfg.Destinations == nil {
		return nil
	}
	return &pauses{src: h.cfg.Destinations, now: h.cfg.Now, after: h.cfg.AutoPause, poll: h.cfg.PausePoll,
		states: map[string]destination.States{}, errs: map[string]error{}}
}

// state returns the destination's state as this invocation knows it.
func (p *pauses) state(ctx context.Context, tenantID, name string) (destination.State, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.states[tenantID]
	if !ok && p.errs[tenantID] == nil {
		var err error
		if s, err = p.src.States(ctx, tenantID); err != nil {
			// Held for this invocation: its other messages wait too,
			// without a read each.
			p.errs[tenantID] = err
		} else {
			p.states[tenantID] = s
		}
	}
	if err := p.errs[tenantID]; err != nil {
		return destination.State{}, err
	}
	return s[name], nil
}

// note records a destination's state after a write of this invocation.
func (p *pauses) note(tenantID, name string, s destination.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.states[tenantID] != nil {
		p.states[tenantID][name] = s
	}
}

// deliverUnlessPaused is deliver behind the destination's state. A paused
// destination gets nothing: the message waits (ErrPaused, back after
// destination.Poll of the pause's age), no attempt counted. Otherwise the
// destination's own answer feeds its auto-pause: a failure (a status other
// than 429, a timeout, a connection that failed) is reported with
// destination.Failed — a write only when it starts a streak or pauses the
// destination —, the first success after failures with Recovered. A
// destination without a name (a legacy targetUrl) cannot be paused.
func deliverUnlessPaused(ctx context.Context, ev *Event, client poster, d tenant.Destination, name string, body []byte) error {
	p := ev.pauses
	if p == nil || d.Name == "" {
		return deliver(ctx, ev, client, d, name, body)
	}
	seen, err := p.state(ctx, ev.Tenant, d.Name)
	if err != nil {
		return fmt.Errorf("state of destination %s: %w", d.Name, err)
	}
	if seen.IsPaused() {
		return waitPaused(seen.Paused, ev.now(), p.poll)
	}
	o := &observed{poster: client}
	err = deliver(ctx, ev, o, d, name, body)
	if !o.posted {
		return err
	}
	fctx, cancel := ev.finish(ctx)
	defer cancel()
	var fe *forward.Error
	var next destination.State
	var serr error
	switch {
	case o.err == nil:
		next, serr = p.src.Recovered(fctx, ev.Tenant, d.Name, ev.now(), seen)
	case errors.As(o.err, &fe) && fe.Status != http.StatusTooManyRequests && ctx.Err() == nil:
		next, serr = p.src.Failed(fctx, ev.Tenant, d.Name, fe.Error(), ev.now(), p.after, seen)
	default:
		return err // a 429 (paced) or a failure of our own (a context ended)
	}
	switch {
	case serr != nil && err == nil:
		// Delivered: a success stands. The state still shows the streak,
		// so the next success ends it.
		return nil
	case serr != nil:
		return errors.Join(err, fmt.Errorf("state of destination %s: %w", d.Name, serr))
	}
	p.note(ev.Tenant, d.Name, next)
	return err
}

// waitPaused is the wait of a message for a paused destination (Forward
// names the destination): destination.Poll of the pause's age, at most
// limit while the pause is younger than destination.MinPoll
// (Config.PausePoll).
func waitPaused(pause destination.Pause, now time.Time, limit time.Duration) error {
	age := now.Sub(pause.Since)
	poll := destination.Poll(age)
	if limit > 0 && age < destination.MinPoll {
		poll = min(poll, limit)
	}
	return RetryAfter(fmt.Errorf("%w: %s", ErrPaused, pause.Describe(now)), poll)
}

// observed is a poster that keeps the destination's own answer.
type observed struct {
	poster
	posted bool
	err    error
}

func (o *observed) Post(ctx context.Context, r forward.Request) error {
	err := o.poster.Post(ctx, r)
	o.posted, o.err = true, err
	return err
}
