package webhook

import (
	"errors"
	"maps"
	"net/http"
	"net/url"
	"time"
)

// Sentinel errors. Providers wrap them with detail that is safe to show the
// sender (never a secret, an expected signature or the body); the ingest
// handler maps each to one HTTP status.
var (
	// ErrMissingSignature: a header the scheme requires is absent (401).
	ErrMissingSignature = errors.New("missing signature")
	// ErrInvalidSignature: no configured secret produced the signature (401).
	ErrInvalidSignature = errors.New("invalid signature")
	// ErrStale: the signed timestamp is outside the tolerance window (401).
	ErrStale = errors.New("timestamp outside tolerance")
	// ErrMalformed: the verified body or a header cannot be parsed (400).
	ErrMalformed = errors.New("malformed delivery")
	// ErrForbidden: a handshake carried the wrong token (403).
	ErrForbidden = errors.New("forbidden")
	// ErrMisconfigured: the tenant's provider settings are unusable (500).
	ErrMisconfigured = errors.New("provider misconfigured")
)

// Request is one inbound delivery exactly as the sender sent it. Body holds
// the raw bytes (already base64-decoded when API Gateway encoded them) and
// must never be re-encoded before verification.
type Request struct {
	Method   string
	Tenant   string
	Provider string
	// Header holds the request headers in canonical form (http.Header.Get is
	// case-insensitive).
	Header http.Header
	Query  url.Values
	Body   []byte
	// URL is the public URL the sender called, as well as it can be
	// reconstructed (scheme, host, path and raw query). Schemes that sign the
	// URL (Twilio) use it; a tenant setting may override the base.
	URL string
}

// SetHeader sets a header of r, creating r.Header when it is nil (Signers
// write to requests built without one).
func (r *Request) SetHeader(key, value string) {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(key, value)
}

// Config is a tenant's configuration for one provider.
type Config struct {
	// Secrets are the inbound signing secrets. Any one of them verifies a
	// request, so a secret rotates by adding the new one, switching the
	// provider over, then removing the old one.
	Secrets []string `json:"secrets"`
	// Settings holds provider-specific options (tolerances, header names,
	// verify tokens, JSON paths). Each provider documents its keys.
	Settings map[string]string `json:"settings,omitempty"`
}

// CheckSecrets returns an error wrapping ErrMisconfigured, naming the
// provider or scheme, when c has no secrets: every Verify and Sign needs at
// least one.
func (c Config) CheckSecrets(name string) error {
	if len(c.Secrets) == 0 {
		return errorf(ErrMisconfigured, "%s: no secrets configured", name)
	}
	return nil
}

// Setting returns Settings[key], or def when it is unset or empty.
func (c Config) Setting(key, def string) string {
	if v := c.Settings[key]; v != "" {
		return v
	}
	return def
}

// Event is one verified event derived from a delivery. A delivery usually
// holds one event; batching providers (WhatsApp) yield several.
type Event struct {
	// ID is the provider's stable event id, and must come from bytes the
	// signature covers: it makes the idempotency key. When empty, the key
	// falls back to a SHA-256 of Defining (or of Body when Defining is nil).
	ID string
	// TraceID is the provider's id for the event when it comes from a header
	// the signature does not cover (X-GitHub-Delivery, X-Shopify-Event-Id,
	// I-Twilio-Idempotency-Token): shown as the envelope's eventId for
	// tracing, never part of the idempotency key, since anyone holding a
	// captured delivery can change it.
	TraceID string
	// Type is the provider's event type (e.g. "invoice.paid", "push").
	Type string
	// Conversation is the ordering key: events with the same conversation
	// are processed in order. Empty means "unordered": the event is its own
	// conversation.
	Conversation string
	// Body is the event payload handed to the worker: the raw body for
	// single-event deliveries, the item's JSON for split batches.
	Body []byte
	// Defining lists the fields that define the event: the content-hash
	// fallback of the key, and the payload digest (see Digest) whether or
	// not ID is set. Delivery metadata (timestamps, attempt counters) never
	// belongs here, so that a provider's re-rendered retry is a duplicate.
	Defining [][]byte
	// Headers are the delivery headers the worker needs (lower-case names).
	Headers map[string]string
}

// Reply is a response a provider requires instead of queuing, such as the
// answer to a verification handshake, or the synchronous answer a sender
// requires to a delivery that is still queued (see Responder).
type Reply struct {
	Status      int
	ContentType string
	Body        string
	// Headers are further response headers the sender checks (lower-case
	// names): Asana's X-Hook-Secret echo, Dropbox's nosniff.
	Headers map[string]string
}

// Equal reports whether r and o are the same reply.
func (r Reply) Equal(o Reply) bool {
	return r.Status == o.Status && r.ContentType == o.ContentType && r.Body == o.Body && maps.Equal(r.Headers, o.Headers)
}

// Provider verifies and parses one provider's deliveries.
//
// Verify checks the signature over the raw request against every secret in
// cfg.Secrets with a constant-time comparison and returns nil, or an error
// wrapping ErrMissingSignature, ErrInvalidSignature, ErrStale or
// ErrMisconfigured. It must not parse the body beyond what the scheme signs.
//
// Events parses a verified request into events and returns an error wrapping
// ErrMalformed when it cannot. Implementations must be safe for concurrent use.
type Provider interface {
	Verify(req *Request, cfg Config, now time.Time) error
	Events(req *Request, cfg Config) ([]Event, error)
}

// Handshaker is implemented by providers that have verification handshakes.
// The ingest path calls Handshake for GET requests (before any signature
// check, since such handshakes are unsigned) and for POST requests after
// Verify succeeded. ok reports whether req was a handshake; when it was, reply
// is sent and nothing is queued. A wrong token returns ErrForbidden.
type Handshaker interface {
	Handshake(req *Request, cfg Config) (reply Reply, ok bool, err error)
}

// Responder is implemented by providers whose sender requires a synchronous
// answer to a delivery the pack still queues (Discord's interaction
// response). The ingest path calls Respond with the delivery, the tenant's
// config and the delivery's events after
// they were queued (or found to be duplicates of queued ones): ok reports
// whether reply replaces the usual JSON answer. A delivery that was not
// queued (a signature, claim or queue error, a reused id) gets the usual
// error answer instead, so the sender sees the failure. Respond must not
// block or fail; implementations must be safe for concurrent use.
type Responder interface {
	Respond(req *Request, cfg Config, evs []Event) (reply Reply, ok bool)
}

// Registry maps provider names (the {provider} path segment) to providers.
type Registry map[string]Provider

// Lookup returns the provider registered under name.
func (r Registry) Lookup(name string) (Provider, bool) {
	p, ok := r[name]
	return p, ok
}

// Checker is implemented by providers that can tell, before a tenant is
// onboarded, whether its settings are complete: Check returns an error
// wrapping ErrMisconfigured that names every missing or unusable field (never
// a secret's value). scripts/tenant validates inbound.json through it.
type Checker interface {
	Check(cfg Config) error
}
