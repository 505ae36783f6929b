// Package providertest is the contract suite every provider adapter runs
// from its tests: Run checks the provider's published vectors, the signing
// round trip, tampering, missing signatures, the replay window, secret
// rotation, idempotency key and payload digest derivation (the provider's
// own retry is a duplicate, and verifies when sent at the end of its retry
// horizon), malformed bodies and handshakes, so that each
// adapter states only what is particular to it (a Case). It also reads the
// sample deliveries under events/samples (Sample, SampleVector), so the
// adapters' tests need nothing from the local harness.
package providertest

import (
	"bytes"
	"errors"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Now is the time the suite signs and verifies at. Request may embed it
// (a body timestamp).
var Now = time.Unix(1_700_000_000, 0)

// Provider is what the suite tests: an adapter that can also sign.
type Provider interface {
	webhook.Provider
	webhook.Signer
}

// BasicAuthSecrets are Case.Secrets for a scheme whose secrets are HTTP
// Basic credentials, "user:password": two of one user, one of another.
var BasicAuthSecrets = [3]string{"hooks:suite-password-one", "hooks:suite-password-two", "other:suite-password-three"}

// Case describes one provider (or one configuration of a configurable one)
// to the suite.
type Case struct {
	Provider Provider
	// Request returns a fresh, unsigned delivery that Events accepts and
	// that is not a handshake.
	Request func() *webhook.Request
	// Settings are the tenant settings of every suite check.
	Settings map[string]string
	// Secrets are three distinct secrets in the scheme's format; the
	// default is three plain strings.
	Secrets [3]string
	// Signature names the header that carries the signature.
	Signature string
	// InBody, when set, reads and writes the signature where a scheme
	// carries it inside the body (Mailgun) instead of the Signature header:
	// Get returns it ("" when absent) and Set replaces it, "" removing it.
	// Sign then rewrites that part of the body, and the round trip checks
	// only that Verify accepts the result.
	InBody *BodySignature
	// Tolerance is the replay window, either way, of a scheme that signs a
	// timestamp under the tenant's own settings (the generic engine), zero
	// when it signs none. A named sender gives Retries instead.
	Tolerance time.Duration
	// Retries, for a named sender that signs a timestamp, is its retry rule
	// as its documentation states it (the provider's own Retries value):
	// the suite checks its Window in place of Tolerance, and sends the
	// sender's retry at the end of its Horizon, signed when the sender
	// would sign it.
	Retries *webhook.Retries
	// OtherEvent turns a delivery into a different event (another event
	// id, or other content where keys are content hashes).
	OtherEvent func(*webhook.Request)
	// Retry turns a delivery into the provider's own retry of it, as the
	// provider's documentation says it sends one (re-rendered delivery
	// counters or timestamps, retry headers; Resent when it sends the same
	// bytes again). The suite signs it again, later: it must have the
	// first delivery's idempotency keys and payload digests, so that it is
	// answered "duplicate", never 409 "id reused". Required.
	Retry func(*webhook.Request)
	// Reused, when set, gives a delivery other content under the same
	// signed event id (the key is the id, not a content hash): it must keep
	// the keys and change a payload digest, so that it is answered 409.
	Reused func(*webhook.Request)
	// Unsigned are the headers the adapter reads that the signature does
	// not cover (delivery ids, topics). A captured delivery re-sent with
	// fresh values in them must still verify — and have the same
	// idempotency keys, so that it is a duplicate.
	Unsigned []string
	// Vectors are the provider's published test vectors.
	Vectors []Vector
	// BodyUnsigned says the scheme authenticates the request without
	// covering the body (a shared token, basic auth, Mailgun's signed
	// token): the suite's tampered body is then not a failure case; Reused,
	// where the scheme has an id, shows other content under it is caught.
	BodyUnsigned bool
	// Tampers are changes after signing that must fail verification, on
	// top of the suite's tampered body and signature.
	Tampers []Change
	// Malformed are changes before signing that Events must answer with
	// webhook.ErrMalformed (400).
	Malformed []Change
	// Handshakes are the provider's handshake requests.
	Handshakes []Handshake
}

// BodySignature reads and writes a signature carried inside the body.
type BodySignature struct {
	Get func(*webhook.Request) string
	Set func(*webhook.Request, string)
}

// Vector is a published test vector: Request verifies under Config at At,
// and signing it again reproduces Headers byte for byte.
type Vector struct {
	// Name says where the vector is published.
	Name    string
	Request func() *webhook.Request
	Config  webhook.Config
	At      time.Time
	// Headers are the headers Sign must reproduce; none for a vector that
	// is only verified.
	Headers []string
	// URL, when set, is the request URL Sign must leave (Twilio puts the
	// body hash in it).
	URL string
}

// Change alters a request. Want is the error Verify must return after a
// tamper (webhook.ErrInvalidSignature when nil); malformed changes ignore it.
type Change struct {
	Name  string
	Apply func(*webhook.Request)
	Want  error
}

// Handshake is a request the provider answers itself.
type Handshake struct {
	Name    string
	Request func() *webhook.Request
	// Settings replace Case.Settings when set.
	Settings map[string]string
	// Signed handshakes arrive signed and are answered after Verify
	// (Slack's url_verification); unsigned ones come before it.
	Signed bool
	OK     bool
	Reply  webhook.Reply
	Err    error
}

// Run runs the contract suite for c.
func Run(t *testing.T, c Case) {
	t.Helper()
	if c.Secrets == [3]string{} {
		c.Secrets = [3]string{"suite-secret-one", "suite-secret-two", "suite-secret-three"}
	}
	s1, s2, s3 := c.Secrets[0], c.Secrets[1], c.Secrets[2]
	getSig := func(r *webhook.Request) string { return r.Header.Get(c.Signature) }
	setSig := func(r *webhook.Request, v string) {
		if v == "" {
			r.Header.Del(c.Signature)
			return
		}
		r.Header.Set(c.Signature, v)
	}
	if c.InBody != nil {
		getSig, setSig = c.InBody.Get, c.InBody.Set
	}
	cfg := func(secrets ...string) webhook.Config {
		return webhook.Config{Secrets: secrets, Settings: c.Settings}
	}
	sign := func(t *testing.T, req *webhook.Request, conf webhook.Config, at time.Time) *webhook.Request {
		t.Helper()
		if err := c.Provider.Sign(req, conf, at); err != nil {
			t.Fatalf("Sign() = %v", err)
		}
		return req
	}
	signed := func(t *testing.T) *webhook.Request {
		t.Helper()
		return sign(t, c.Request(), cfg(s1, s2), Now)
	}
	verify := func(t *testing.T, req *webhook.Request, conf webhook.Config, at time.Time, want error) {
		t.Helper()
		err := c.Provider.Verify(req, conf, at)
		if !errors.Is(err, want) {
			t.Errorf("Verify(%s: %q) = %v, want %v", c.Signature, getSig(req), err, want)
		}
	}

	t.Run("vectors", func(t *testing.T) {
		for _, v := range c.Vectors {
			t.Run(v.Name, func(t *testing.T) {
				req := v.Request()
				verify(t, req, v.Config, v.At, nil)
				if len(v.Headers) == 0 {
					return
				}
				want := make([]string, len(v.Headers))
				for i, h := range v.Headers {
					want[i] = req.Header.Get(h)
					req.Header.Del(h)
				}
				sign(t, req, v.Config, v.At)
				for i, h := range v.Headers {
					if got := req.Header.Get(h); got != want[i] {
						t.Errorf("Sign() %s = %q, want %q", h, got, want[i])
					}
				}
				if v.URL != "" && req.URL != v.URL {
					t.Errorf("Sign() URL = %q, want %q", req.URL, v.URL)
				}
			})
		}
	})

	t.Run("round trip", func(t *testing.T) {
		req := c.Request()
		if len(req.Header) == 0 {
			req.Header = nil // Sign must add the map a bare request lacks
		}
		body := bytes.Clone(req.Body)
		sign(t, req, cfg(s1, s2), Now)
		if getSig(req) == "" {
			t.Fatalf("Sign() set no %s: %v", c.Signature, req.Header)
		}
		if c.InBody == nil && !bytes.Equal(req.Body, body) {
			t.Errorf("Sign() changed the body to %q", req.Body)
		}
		verify(t, req, cfg(s1, s2), Now, nil)
	})

	t.Run("rotation", func(t *testing.T) {
		verify(t, signed(t), cfg(s3, s1), Now, nil)                          // the signing secret listed second
		verify(t, signed(t), cfg(s2), Now, webhook.ErrInvalidSignature)      // signs with the first secret only
		verify(t, sign(t, c.Request(), cfg(s2), Now), cfg(s1, s2), Now, nil) // either secret verifies
	})

	t.Run("sign replaces an earlier signature", func(t *testing.T) {
		req := sign(t, c.Request(), cfg(s2), Now.Add(-time.Hour))
		sign(t, req, cfg(s1), Now)
		verify(t, req, cfg(s1), Now, nil)
		verify(t, req, cfg(s2), Now, webhook.ErrInvalidSignature)
	})

	t.Run("tampered", func(t *testing.T) {
		var tampers []Change
		if !c.BodyUnsigned {
			tampers = append(tampers, Change{Name: "body", Apply: func(r *webhook.Request) { r.Body = append(r.Body, ' ') }})
		}
		tampers = append(append(tampers, []Change{
			{Name: "signature", Apply: func(r *webhook.Request) { setSig(r, flip(getSig(r))) }},
			{Name: "line break in signature", Apply: func(r *webhook.Request) { setSig(r, breakLine(getSig(r))) }},
			{Name: "signature removed", Apply: func(r *webhook.Request) { setSig(r, "") }, Want: webhook.ErrMissingSignature},
		}...), c.Tampers...)
		for _, tt := range tampers {
			t.Run(tt.Name, func(t *testing.T) {
				req := signed(t)
				tt.Apply(req)
				want := tt.Want
				if want == nil {
					want = webhook.ErrInvalidSignature
				}
				verify(t, req, cfg(s1, s2), Now, want)
			})
		}
	})

	t.Run("no secrets", func(t *testing.T) {
		verify(t, signed(t), cfg(), Now, webhook.ErrMisconfigured)
		if err := c.Provider.Sign(c.Request(), cfg(), Now); !errors.Is(err, webhook.ErrMisconfigured) {
			t.Errorf("Sign(no secrets) = %v, want %v", err, webhook.ErrMisconfigured)
		}
	})

	t.Run("error is safe to show", func(t *testing.T) {
		req := signed(t)
		err := c.Provider.Verify(req, cfg(s3), Now)
		if !errors.Is(err, webhook.ErrInvalidSignature) {
			t.Fatalf("Verify(wrong secret) = %v, want %v", err, webhook.ErrInvalidSignature)
		}
		expected := getSig(sign(t, c.Request(), cfg(s3), Now))
		leaks := []string{s1, s2, s3, tail(expected), tail(getSig(req))}
		if len(req.Body) >= 8 {
			leaks = append(leaks, string(req.Body))
		}
		for _, leak := range leaks {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("Verify error %q leaks %q", err, leak)
			}
		}
	})

	t.Run("replay window", func(t *testing.T) {
		w := webhook.Symmetric(c.Tolerance)
		if c.Retries != nil {
			w = c.Retries.Window
		}
		if w.Past == 0 {
			// Nothing is signed but the body: an hour later it still verifies,
			// and the idempotency key is the only replay defence.
			verify(t, signed(t), cfg(s1), Now.Add(time.Hour), nil)
			return
		}
		type check struct {
			name string
			at   time.Time
			want error
		}
		cases := []check{
			{"oldest accepted", Now.Add(w.Past), nil},
			{"stale", Now.Add(w.Past + time.Second), webhook.ErrStale},
		}
		if w.Future == webhook.AnyFuture {
			// The sender's own verifier rejects only old timestamps.
			cases = append(cases, check{"a day ahead, as the sender's verifier accepts", Now.Add(-24 * time.Hour), nil})
		} else {
			cases = append(cases,
				check{"newest accepted", Now.Add(-w.Future), nil},
				check{"from the future", Now.Add(-w.Future - time.Second), webhook.ErrStale})
		}
		for _, tt := range cases {
			t.Run(tt.name, func(t *testing.T) { verify(t, signed(t), cfg(s1), tt.at, tt.want) })
		}
	})

	t.Run("the sender's retry at the end of its horizon", func(t *testing.T) {
		r := c.Retries
		if r == nil {
			if c.Tolerance > 0 {
				t.Skip("the tenant's own scheme: no sender, no retry horizon")
			}
			return
		}
		if r.Source == "" {
			t.Fatal("Retries.Source is required: the page that states the sender's retries")
		}
		// The first attempt was signed a horizon ago; the last retry is
		// sent now, signed now by a sender that signs each attempt, else
		// carrying the first attempt's signature.
		// Where the horizon is not documented, the one assumed
		// (webhook.UndocumentedHorizon).
		at := Now.Add(-r.Covers() + time.Second)
		if r.Signing != webhook.Unsaid {
			at = Now.Add(-time.Second)
		}
		retry := c.Request()
		c.Retry(retry)
		verify(t, sign(t, retry, cfg(s1), at), cfg(s1), Now, nil)
		if r.Window.Past < r.Covers() {
			t.Errorf("Window.Past %s < horizon %s: a retry carrying its first signature would be refused", r.Window.Past, r.Covers())
		}
	})

	t.Run("idempotency key", func(t *testing.T) {
		first := claims(t, c.Provider, signed(t), cfg(s1))
		// A re-signed delivery, later, is the same delivery.
		again := claims(t, c.Provider, sign(t, c.Request(), cfg(s1), Now.Add(30*time.Second)), cfg(s1))
		if !maps.Equal(first, again) {
			t.Errorf("keys and digests of a re-signed delivery %v, want %v", again, first)
		}
		other := c.Request()
		c.OtherEvent(other)
		for k := range claims(t, c.Provider, sign(t, other, cfg(s1), Now), cfg(s1)) {
			if _, ok := first[k]; ok {
				t.Errorf("another event has the key %q of the first", k)
			}
		}
	})

	t.Run("the provider's own retry is a duplicate", func(t *testing.T) {
		if c.Retry == nil {
			t.Fatal("Case.Retry is required: the provider's retry as its documentation describes it (Resent when it sends the same bytes)")
		}
		first := claims(t, c.Provider, signed(t), cfg(s1))
		retry := c.Request()
		c.Retry(retry)
		got := claims(t, c.Provider, sign(t, retry, cfg(s1), Now.Add(30*time.Second)), cfg(s1))
		if !maps.Equal(got, first) {
			t.Errorf("keys and digests of the provider's retry %v, want the first delivery's %v: the retry would be answered 409 id reused, not duplicate", got, first)
		}
	})

	t.Run("reused id with other content", func(t *testing.T) {
		if c.Reused == nil {
			return
		}
		first := claims(t, c.Provider, signed(t), cfg(s1))
		reused := c.Request()
		c.Reused(reused)
		got := claims(t, c.Provider, sign(t, reused, cfg(s1), Now), cfg(s1))
		changed := false
		for k, d := range got {
			want, ok := first[k]
			if !ok {
				t.Errorf("key %q of the reused id is not a key of the first delivery %v", k, first)
			}
			changed = changed || ok && d != want
		}
		if !changed {
			t.Errorf("keys and digests of other content under the same id %v equal the first delivery's %v: the reuse would go unnoticed", got, first)
		}
	})

	t.Run("replay with fresh unsigned headers", func(t *testing.T) {
		captured := signed(t)
		first := claims(t, c.Provider, captured, cfg(s1))
		for _, h := range c.Unsigned {
			t.Run(h, func(t *testing.T) {
				replay := signed(t)
				replay.Header.Set(h, "replayed-"+h)
				if got := claims(t, c.Provider, replay, cfg(s1)); !maps.Equal(got, first) {
					t.Errorf("keys and digests after changing %s = %v, want the captured delivery's %v: the replay must be a duplicate", h, got, first)
				}
			})
		}
	})

	t.Run("malformed", func(t *testing.T) {
		for _, m := range c.Malformed {
			t.Run(m.Name, func(t *testing.T) {
				req := c.Request()
				m.Apply(req)
				if err := c.Provider.Sign(req, cfg(s1), Now); err != nil {
					if !errors.Is(err, webhook.ErrMalformed) {
						t.Fatalf("Sign() = %v, want nil or %v", err, webhook.ErrMalformed)
					}
				} else {
					verify(t, req, cfg(s1), Now, nil)
				}
				if evs, err := c.Provider.Events(req, cfg(s1)); !errors.Is(err, webhook.ErrMalformed) {
					t.Errorf("Events(%q) = %d events, %v; want %v", req.Body, len(evs), err, webhook.ErrMalformed)
				}
			})
		}
	})

	t.Run("handshake", func(t *testing.T) {
		h, ok := c.Provider.(webhook.Handshaker)
		if !ok {
			if len(c.Handshakes) > 0 {
				t.Fatal("Handshakes listed for a provider that is no webhook.Handshaker")
			}
			return
		}
		if _, ok, err := h.Handshake(signed(t), cfg(s1)); ok || err != nil {
			t.Errorf("Handshake(an event delivery) = %v, %v; want false, nil", ok, err)
		}
		for _, hs := range c.Handshakes {
			t.Run(hs.Name, func(t *testing.T) {
				conf := cfg(s1)
				if hs.Settings != nil {
					conf.Settings = hs.Settings
				}
				req := hs.Request()
				if hs.Signed {
					sign(t, req, conf, Now)
					verify(t, req, conf, Now, nil)
				}
				reply, ok, err := h.Handshake(req, conf)
				if ok != hs.OK || !reply.Equal(hs.Reply) || !errors.Is(err, hs.Err) {
					t.Errorf("Handshake() = %+v, %v, %v; want %+v, %v, %v", reply, ok, err, hs.Reply, hs.OK, hs.Err)
				}
				for _, v := range conf.Settings {
					if err != nil && len(v) >= 4 && strings.Contains(err.Error(), v) {
						t.Errorf("Handshake error %q leaks the setting %q", err, v)
					}
				}
			})
		}
	})
}

// Request returns a POST delivery of body carrying the non-empty headers.
func Request(header map[string]string, body string) *webhook.Request {
	h := http.Header{}
	for k, v := range header {
		if v != "" {
			h.Set(k, v)
		}
	}
	return &webhook.Request{Method: http.MethodPost, Header: h, Body: []byte(body)}
}

// JSON returns a Case.Request: a POST of body as application/json.
func JSON(body string) func() *webhook.Request {
	return func() *webhook.Request {
		return Request(map[string]string{"Content-Type": "application/json"}, body)
	}
}

// Resent is the Retry of a provider that sends the very same request again
// (only what Sign sets, such as a signed timestamp, changes).
func Resent(*webhook.Request) {}

// Body returns a change that makes body the request's body.
func Body(body string) func(*webhook.Request) {
	return func(r *webhook.Request) { r.Body = []byte(body) }
}

// Replace returns a change that replaces the first old in the request's
// body with new.
func Replace(old, new string) func(*webhook.Request) {
	return func(r *webhook.Request) { r.Body = []byte(strings.Replace(string(r.Body), old, new, 1)) }
}

// Header returns a change that sets the header name to value, or removes
// it when value is "".
func Header(name, value string) func(*webhook.Request) {
	return func(r *webhook.Request) {
		if value == "" {
			r.Header.Del(name)
			return
		}
		r.Header.Set(name, value)
	}
}

// Misconfigured fails t unless c.Check(cfg) returns an error wrapping
// webhook.ErrMisconfigured that names each of mentions and quotes none of
// cfg's secrets.
func Misconfigured(t testing.TB, c webhook.Checker, cfg webhook.Config, mentions ...string) {
	t.Helper()
	err := c.Check(cfg)
	if !errors.Is(err, webhook.ErrMisconfigured) {
		t.Errorf("Check(%d secrets, settings %v) = %v, want %v", len(cfg.Secrets), cfg.Settings, err, webhook.ErrMisconfigured)
		return
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("Check(%d secrets, settings %v) = %q, want it to name %q", len(cfg.Secrets), cfg.Settings, err, m)
		}
	}
	for _, s := range cfg.Secrets {
		if len(s) >= 4 && strings.Contains(err.Error(), s) {
			t.Errorf("Check() error %q quotes a secret", err)
		}
	}
}

// OneEvent returns the one event p reads from req under cfg. It fails t
// when Events returns an error or another number of events.
func OneEvent(t testing.TB, p webhook.Provider, req *webhook.Request, cfg webhook.Config) webhook.Event {
	t.Helper()
	evs, err := p.Events(req, cfg)
	if err != nil || len(evs) != 1 {
		t.Fatalf("Events() = %d events, %v; want one", len(evs), err)
	}
	return evs[0]
}

// WantEvent fails t unless p reads exactly one event from req under cfg
// and it has want's ID, Type and Conversation. It returns the event.
func WantEvent(t testing.TB, p webhook.Provider, req *webhook.Request, cfg webhook.Config, want webhook.Event) webhook.Event {
	t.Helper()
	ev := OneEvent(t, p, req, cfg)
	if ev.ID != want.ID || ev.Type != want.Type || ev.Conversation != want.Conversation {
		t.Errorf("Events() = id %q type %q conv %q; want %q %q %q", ev.ID, ev.Type, ev.Conversation, want.ID, want.Type, want.Conversation)
	}
	return ev
}

// claims returns what the ingest path claims for a verified delivery: each
// event's idempotency key with the payload digest stored under it. A key
// seen again with the same digest is a duplicate, with another one a 409.
func claims(t *testing.T, p webhook.Provider, req *webhook.Request, conf webhook.Config) map[string]string {
	t.Helper()
	if err := p.Verify(req, conf, Now); err != nil {
		t.Fatalf("Verify() = %v", err)
	}
	evs, err := p.Events(req, conf)
	if err != nil || len(evs) == 0 {
		t.Fatalf("Events() = %d events, %v; want at least one", len(evs), err)
	}
	out := map[string]string{}
	for _, ev := range evs {
		out[webhook.IdempotencyKey("tenant", "provider", ev)] = webhook.Digest(ev)
	}
	return out
}

// flip changes one character inside the signature, well before its end,
// where every encoding still carries signature bits (the last base64
// character may only carry padding).
func flip(sig string) string {
	if len(sig) < 8 {
		return sig + "0"
	}
	i := len(sig) - 8
	c := byte('a')
	if sig[i] == 'a' {
		c = 'b'
	}
	return sig[:i] + string(c) + sig[i+1:]
}

// breakLine puts a line break inside the signature itself: the real MAC
// spelled another way, which base64 and hex decoders must not accept (Go's
// base64 skips \r and \n).
func breakLine(sig string) string {
	i := max(len(sig)-8, 0)
	return sig[:i] + "\n" + sig[i:]
}

// tail returns the last 16 characters of a signature header: part of the
// signature itself whatever prefix the scheme puts before it.
func tail(sig string) string {
	if len(sig) <= 16 {
		return "\x00never"
	}
	return sig[len(sig)-16:]
}
