package webhook

import "time"

// Skew is the clock allowance of a signed timestamp: how far a sender's
// clock may be from ours, and the window of a sender that signs each
// attempt when it sends it.
const Skew = 5 * time.Minute

// AnyFuture, as a Window's Future, accepts a timestamp however far ahead of
// now: the rule of a sender whose own verifier rejects only old ones
// (HubSpot's Signature.isValid).
const AnyFuture time.Duration = -1

// Window is the rule for a signed timestamp: it may be at most Past older
// than now and at most Future ahead of it (any lead when Future is
// AnyFuture).
type Window struct {
	Past, Future time.Duration
}

// Symmetric returns the window of tolerance in either direction.
func Symmetric(tolerance time.Duration) Window { return Window{Past: tolerance, Future: tolerance} }

// Check returns nil when ts lies within w of now, else an error wrapping
// ErrStale that says how far away ts is.
func (w Window) Check(ts, now time.Time) error {
	d := now.Sub(ts)
	if d > w.Past || w.Future != AnyFuture && d < -w.Future {
		return errorf(ErrStale, "timestamp is %s away from now, window %s back, %s ahead", d.Round(time.Second), w.Past, w.ahead())
	}
	return nil
}

// ahead spells Future for errors.
func (w Window) ahead() string {
	if w.Future == AnyFuture {
		return "any"
	}
	return w.Future.String()
}

// CheckUnix checks a Unix-seconds timestamp as Check does. It returns an
// error wrapping ErrMissingSignature when raw is not Unix seconds, or
// Check's.
func (w Window) CheckUnix(raw string, now time.Time) error {
	ts, err := unixSeconds(raw)
	if err != nil {
		return err
	}
	return w.Check(ts, now)
}

// Tenant returns w with Past replaced by the tenant's "tolerance" setting
// when cfg sets one (Future stays the sender's rule). It returns an error
// wrapping ErrMisconfigured when the setting is not a positive duration.
func (w Window) Tenant(cfg Config) (Window, error) {
	past, err := ParseTolerance(cfg.Settings["tolerance"], w.Past)
	if err != nil {
		return Window{}, err
	}
	w.Past = past
	return w, nil
}

// Signing says whether a sender signs each retry when it sends it.
type Signing int

const (
	// Unsaid: the sender's documentation does not say; a retry may carry
	// the first attempt's timestamp.
	Unsaid Signing = iota
	// Resigned: the documentation says each attempt is signed when sent.
	Resigned
	// ByRule: the sender's own verifier rejects timestamps older than its
	// rule, which its retries outlast, so each attempt is signed when sent.
	ByRule
	// Once: the sender documents no retry; a request is sent once.
	Once
)

// Retries is what a sender's documentation says of its retries, and the
// window hookpack gives its signed timestamp by default (a tenant's
// "tolerance" replaces Window.Past).
type Retries struct {
	Signing Signing
	// Horizon is how long after the first attempt the sender sends its
	// last retry; zero when its documentation does not say.
	Horizon time.Duration
	// Source is the page (URL or repository path) that says so.
	Source string
	// Window is the default rule: the sender's own where it has one, Skew
	// when each attempt is signed when sent, else Covering(Horizon), or
	// Covering(UndocumentedHorizon) when the horizon is not documented.
	Window Window
}

// Covers is the horizon a Window that may see a retry's first signature
// must reach back over: Horizon, or UndocumentedHorizon when the sender
// documents neither a schedule nor that it signs each retry again. Zero
// when each retry is signed when sent or there is none.
func (r Retries) Covers() time.Duration {
	switch {
	case r.Signing != Unsaid:
		return 0
	case r.Horizon > 0:
		return r.Horizon
	default:
		return UndocumentedHorizon
	}
}

// UndocumentedHorizon is the retry horizon assumed for a sender that
// documents neither its schedule nor that it signs each retry again: four
// days, past the longest schedule a named sender documents (Standard
// Webhooks' 75 h 35 min 5 s) and inside the idempotency table's seven-day
// retention, so a retry carrying its first signature is still verified
// and still found a duplicate.
const UndocumentedHorizon = 96 * time.Hour

// Covering returns the window of a sender whose retry may carry its first
// signature: Horizon plus Skew back, Skew ahead.
func Covering(horizon time.Duration) Window {
	return Window{Past: horizon + Skew, Future: Skew}
}
