package worker

import "context"

// HandlerFunc applies one event. It runs each side effect through
// ev.Once, returns nil when the event is done, Permanent(err) when it can
// never succeed, and any other error to have it retried. It must honour
// ctx, which ends at the work deadline.
type HandlerFunc func(ctx context.Context, ev *Event) error

// Any matches every provider or event type in Registry.Handle.
const Any = "*"

// Registry maps provider and event type to a handler. Register everything
// before the first batch; lookups are then safe for concurrent use.
type Registry struct {
	handlers map[[2]string]HandlerFunc
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{handlers: map[[2]string]HandlerFunc{}}
}

// Handle registers h for events of provider with eventType; either may be
// Any. A later registration for the same pair replaces the earlier one.
func (r *Registry) Handle(provider, eventType string, h HandlerFunc) {
	r.handlers[[2]string{provider, eventType}] = h
}

// Lookup returns the most specific handler for provider and eventType:
// exact pair, then provider with Any type, then Any provider with the type,
// then Any/Any.
func (r *Registry) Lookup(provider, eventType string) (HandlerFunc, bool) {
	for _, k := range [][2]string{
		{provider, eventType}, {provider, Any}, {Any, eventType}, {Any, Any},
	} {
		if h, ok := r.handlers[k]; ok {
			return h, true
		}
	}
	return nil, false
}

// Discard is a handler that does nothing: register it for event types
// that are dropped on purpose (an unmatched type is dead-lettered, never
// silently dropped).
func Discard(context.Context, *Event) error { return nil }
