package worker

import (
	"context"

	"github.com/hookpack/hookpack/pkg/queue"
)

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
	// forward is the built-in forward (HandleForward), while it is the
	// Any/Any handler.
	forward HandlerFunc
}

// HandleForward registers h, the built-in forward (Forward), for every
// provider and event type. A destination's own stream (queue.Stream
// without Effects) runs it whatever else is registered, and a stream of
// custom effects only whose event resolves to it is done without a write.
func (r *Registry) HandleForward(h HandlerFunc) {
	r.Handle(Any, Any, h)
	r.forward = h
}

// streamHandler returns the handler of an event of provider and eventType
// on stream s, and whether nothing is to be done (a stream of custom
// effects only whose handler is the built-in forward).
func (r *Registry) streamHandler(s queue.Stream, provider, eventType string) (h HandlerFunc, ok, idle bool) {
	if s.Destination != "" && !s.Effects && r.forward != nil {
		return r.forward, true, false
	}
	h, ok = r.Lookup(provider, eventType)
	key, _ := r.resolve(provider, eventType)
	idle = ok && s.Effects && s.Destination == "" && r.forward != nil && key == [2]string{Any, Any}
	return h, ok, idle
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{handlers: map[[2]string]HandlerFunc{}}
}

// Handle registers h for events of provider with eventType; either may be
// Any. A later registration for the same pair replaces the earlier one.
func (r *Registry) Handle(provider, eventType string, h HandlerFunc) {
	r.handlers[[2]string{provider, eventType}] = h
	if provider == Any && eventType == Any {
		r.forward = nil
	}
}

// Lookup returns the most specific handler for provider and eventType:
// exact pair, then provider with Any type, then Any provider with the type,
// then Any/Any.
func (r *Registry) Lookup(provider, eventType string) (HandlerFunc, bool) {
	k, ok := r.resolve(provider, eventType)
	return r.handlers[k], ok
}

// resolve returns the key Lookup finds.
func (r *Registry) resolve(provider, eventType string) ([2]string, bool) {
	for _, k := range [][2]string{
		{provider, eventType}, {provider, Any}, {Any, eventType}, {Any, Any},
	} {
		if _, ok := r.handlers[k]; ok {
			return k, true
		}
	}
	return [2]string{}, false
}

// Discard is a handler that does nothing: register it for event types
// that are dropped on purpose (an unmatched type is dead-lettered, never
// silently dropped).
func Discard(context.Context, *Event) error { return nil }
