package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookpack/hookpack/pkg/forward"
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
// tenant's target URL (as forward.Payload carries it: a body that is not
// JSON wrapped in a JSON document), once, signed with the tenant's outbound Standard
// Webhooks secrets, with webhook-id forward.MessageID(event key) and the
// effect's Idempotency-Key, within the tenant's timeout (forward's default
// when unset) and the work deadline. It also sends the unsigned headers
// Hookpack-Tenant, Hookpack-Provider, Hookpack-Event-Type, Hookpack-Event-Id
// and Hookpack-Conversation for routing (and, with a wrapped body,
// Hookpack-Original-Content-Type). Unlike Event.Once, a successful
// forward is recorded completed by its message's deletion (no write of its
// own) unless Config.CompleteEffects is set: a forward repeated after a
// lost deletion, a duplicate invocation or a redrive carries the same
// Idempotency-Key and webhook-id, which the receiver deduplicates.
//
// A tenant without outbound configuration or target URL, an unusable
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
		case out.TargetURL == "":
			return Permanent(fmt.Errorf("%w for tenant %s: targetUrl is empty", ErrNoTarget, ev.Tenant))
		}
		var timeout time.Duration
		if out.Timeout != "" {
			if timeout, err = time.ParseDuration(out.Timeout); err != nil || timeout <= 0 {
				return Permanent(fmt.Errorf("%w for tenant %s: timeout %q is not a positive duration", ErrNoTarget, ev.Tenant, out.Timeout))
			}
		}
		body, err := ev.RawBody()
		if err != nil {
			return Permanent(err)
		}
		budget := timeout
		if budget == 0 {
			budget = forward.DefaultTimeout
		}
		return ev.once(ctx, ForwardEffect, budget, true, func(ctx context.Context, idempotencyKey string) error {
			return client.Post(ctx, forward.Request{
				URL:            out.TargetURL,
				ID:             forward.MessageID(ev.Key),
				IdempotencyKey: idempotencyKey,
				Body:           body,
				ContentType:    ev.Headers["content-type"],
				Secrets:        out.Secrets,
				Timeout:        timeout,
				Headers: map[string]string{
					"Hookpack-Tenant":       ev.Tenant,
					"Hookpack-Provider":     ev.Provider,
					"Hookpack-Event-Type":   ev.Type,
					"Hookpack-Event-Id":     ev.EventID,
					"Hookpack-Conversation": ev.Conversation,
				},
			})
		})
	}
}
