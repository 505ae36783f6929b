package forward

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds one delivery attempt when the request sets none.
const DefaultTimeout = 10 * time.Second

// Sentinel errors, wrapped by *Error.
var (
	// ErrRejected: the target answered a status that retrying cannot fix
	// (4xx other than 408, 409, 425 and 429, or a redirect). Permanent.
	ErrRejected = errors.New("target rejected the event")
	// ErrUnavailable: the target answered 408, 409, 425, 429 or 5xx, timed
	// out or could not be reached. Transient.
	ErrUnavailable = errors.New("target unavailable")
	// ErrMisconfigured: the target URL, its TLS certificate, a header name or
	// the signing secrets are unusable. Permanent until the tenant's outbound
	// configuration (or the target's certificate) is fixed.
	ErrMisconfigured = errors.New("outbound configuration unusable")
)

// Error is a classified delivery failure. Its message names the status or
// the kind of transport failure, never the URL's credentials, a header or a
// body, so it is safe to log and to store as a dead-letter reason.
type Error struct {
	// Status is the HTTP status, 0 when no response arrived.
	Status     int
	retryAfter time.Duration
	permanent  bool
	err        error
	detail     string
}

func (e *Error) Error() string { return e.err.Error() + ": " + e.detail }
func (e *Error) Unwrap() error { return e.err }

// Permanent reports whether retrying cannot succeed. The worker dead-letters
// permanent failures and retries the others.
func (e *Error) Permanent() bool { return e.permanent }

// RetryAfter is the wait the target asked for (Retry-After), or 0.
func (e *Error) RetryAfter() time.Duration { return e.retryAfter }

// Request is one delivery.
type Request struct {
	URL string
	// ID is the webhook-id (MessageID of the event key).
	ID string
	// IdempotencyKey is sent as the Idempotency-Key header.
	IdempotencyKey string
	// Body is the event body as the provider sent it, and ContentType its
	// Content-Type; Post sends Payload(Body, ContentType).
	Body        []byte
	ContentType string
	// Secrets sign the delivery; every one yields a signature.
	Secrets []string
	// Timeout bounds the attempt (DefaultTimeout when 0); ctx may end it
	// sooner.
	Timeout time.Duration
	// Headers are extra, unsigned headers; they cannot replace the
	// signature, idempotency or content type headers. Control characters in their values
	// (CR, LF, NUL, …) are replaced by spaces so that no value can break or
	// inject into the request; a name that is not an HTTP token makes the
	// delivery permanent ErrMisconfigured.
	Headers map[string]string
}

// Client posts deliveries. It is safe for concurrent use.
type Client struct {
	http *http.Client
	now  func() time.Time
}

// New returns a client using a copy of hc (http.DefaultClient's settings
// when nil) that never follows redirects: a redirected POST would arrive as
// a GET without its body. now may be nil.
func New(hc *http.Client, now func() time.Time) *Client {
	var c http.Client
	if hc != nil {
		c = *hc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if now == nil {
		now = time.Now
	}
	return &Client{http: &c, now: now}
}

// Post delivers r once: its body is Payload(r.Body, r.ContentType), with
// HeaderOriginalContentType when that wraps it. It returns nil on a 2xx answer, a *Error wrapping
// ErrRejected, ErrUnavailable or ErrMisconfigured, or ctx's error when the
// caller's context ended first.
func (c *Client) Post(ctx context.Context, r Request) error {
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return &Error{permanent: true, err: ErrMisconfigured, detail: "target URL must be an absolute http(s) URL"}
	}
	body, contentType, wrapped := Payload(r.Body, r.ContentType)
	ts := c.now()
	sig, err := Sign(r.ID, ts, body, r.Secrets)
	if err != nil {
		return &Error{permanent: true, err: ErrMisconfigured, detail: err.Error()}
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return &Error{permanent: true, err: ErrMisconfigured, detail: "cannot build the request"}
	}
	for k, v := range r.Headers {
		if !validHeaderName(k) {
			return &Error{permanent: true, err: ErrMisconfigured, detail: fmt.Sprintf("header name %q is not an HTTP token", k)}
		}
		req.Header.Set(k, headerValue(v))
	}
	req.Header.Set("Content-Type", headerValue(contentType))
	if wrapped {
		original := r.ContentType
		if original == "" {
			original = "application/octet-stream"
		}
		req.Header.Set(HeaderOriginalContentType, headerValue(original))
	} else {
		req.Header.Del(HeaderOriginalContentType) // only ever hookpack's own
	}
	req.Header.Set("User-Agent", "hookpack-forward/1")
	req.Header.Set(HeaderID, headerValue(r.ID))
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)
	if r.IdempotencyKey != "" {
		req.Header.Set(HeaderIdempotencyKey, headerValue(r.IdempotencyKey))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			// The caller's deadline or cancellation, not the target's fault.
			return fmt.Errorf("post to target: %w", ctx.Err())
		}
		return Classify(0, nil, err, c.now())
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	return Classify(resp.StatusCode, resp.Header, nil, c.now())
}

// Classify turns a delivery outcome into nil (2xx) or a *Error.
// Transport errors: a TLS certificate the client does not trust (unknown
// authority, expired, wrong host name), a TLS handshake the target refuses
// and an https URL answered in plain text are permanent ErrMisconfigured;
// timeouts, refused or reset connections and DNS failures are transient.
// Statuses: 408, 409, 425, 429 and 5xx are transient, with Retry-After
// (seconds or an HTTP date, relative to now) honoured; redirects and other
// 4xx are permanent.
func Classify(status int, h http.Header, transportErr error, now time.Time) error {
	if transportErr != nil {
		if detail, ok := tlsFailure(transportErr); ok {
			return &Error{permanent: true, err: ErrMisconfigured, detail: detail}
		}
		detail := "connection failed"
		var ue *url.Error
		if errors.Is(transportErr, context.DeadlineExceeded) || (errors.As(transportErr, &ue) && ue.Timeout()) {
			detail = "timed out"
		}
		return &Error{err: ErrUnavailable, detail: detail}
	}
	text := strconv.Itoa(status) + " " + http.StatusText(status)
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status == http.StatusTooEarly ||
		status == http.StatusTooManyRequests || status >= 500:
		return &Error{Status: status, err: ErrUnavailable, detail: "answered " + text, retryAfter: RetryAfter(h, now)}
	case status >= 300 && status < 400:
		return &Error{Status: status, permanent: true, err: ErrRejected, detail: "answered " + text + " (redirects are not followed; configure the final URL)"}
	default:
		return &Error{Status: status, permanent: true, err: ErrRejected, detail: "answered " + text}
	}
}

// RetryAfter parses a Retry-After header: delay seconds or an HTTP date
// (relative to now). It returns 0 when the header is absent, unparsable or
// in the past.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		const maxSeconds = int64(1<<63-1) / int64(time.Second)
		return time.Duration(min(s, maxSeconds)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// tlsFailure reports whether err is a TLS failure that retrying cannot fix,
// and a description naming its kind but not the URL (which may carry
// credentials).
func tlsFailure(err error) (string, bool) {
	var (
		verr    *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
		host    x509.HostnameError
		record  tls.RecordHeaderError
		alert   tls.AlertError
	)
	switch {
	case errors.As(err, &unknown):
		return "TLS certificate signed by an unknown authority", true
	case errors.As(err, &invalid):
		return "TLS certificate invalid: " + invalid.Error(), true
	case errors.As(err, &host):
		return "TLS certificate not valid for the target host", true
	case errors.As(err, &verr):
		return "TLS certificate not trusted", true
	case errors.Is(err, http.ErrSchemeMismatch) || errors.As(err, &record):
		return "target does not speak TLS (https URL to a plain-text port?)", true
	case errors.As(err, &alert) && permanentAlert(alert):
		return "TLS handshake refused by the target: " + alert.Error(), true
	}
	return "", false
}

// permanentAlert reports whether a TLS alert from the target means the two
// sides cannot agree on a connection (RFC 8446 section 6.2), rather than a
// passing failure on its side.
func permanentAlert(a tls.AlertError) bool {
	switch a {
	case 40, // handshake_failure
		42, 43, 44, 45, 46, // bad, unsupported, revoked, expired, unknown certificate
		48,  // unknown_ca
		70,  // protocol_version
		71,  // insufficient_security
		112, // unrecognized_name
		116: // certificate_required
		return true
	}
	return false
}

// headerValue replaces control characters (other than tab) by spaces, so a
// value taken from an event (a conversation id, a content type) can neither
// break the request nor add a header.
func headerValue(v string) string {
	if !strings.ContainsFunc(v, isCTL) {
		return v
	}
	return strings.Map(func(r rune) rune {
		if isCTL(r) {
			return ' '
		}
		return r
	}, v)
}

func isCTL(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
