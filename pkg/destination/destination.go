package destination

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hookpack/hookpack/pkg/internal/epoch"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/tenantid"
)

// Sentinel errors.
var (
	// ErrInvalid: a tenant id, destination name or reason fails validation.
	ErrInvalid = errors.New("invalid destination state")
	// ErrAlreadyPaused: Pause found the destination paused; the error
	// comes with the pause in force, which is left as it was.
	ErrAlreadyPaused = errors.New("destination already paused")
	// ErrNotPaused: Resume found the destination not paused.
	ErrNotPaused = errors.New("destination not paused")
	// ErrUnknown: the tenant's configuration has no destination of that
	// name (Known).
	ErrUnknown = errors.New("unknown destination")
	// ErrUnknownTenant: the tenant has no outbound configuration
	// (Operator).
	ErrUnknownTenant = errors.New("unknown tenant")
)

// Known returns nil when out, a tenant's outbound configuration, has a
// destination named name; otherwise an error wrapping ErrUnknown that
// names the ones it has (a legacy targetUrl has no name: it cannot be
// paused).
func Known(tenantID string, out tenant.Outbound, name string) error {
	var names []string
	for _, d := range out.Destinations {
		if d.Name == name {
			return nil
		}
		names = append(names, d.Name)
	}
	if out.TargetURL != "" {
		return fmt.Errorf("%w: tenant %s forwards to a targetUrl, which has no name and cannot be paused (give it a \"destinations\" entry instead)", ErrUnknown, tenantID)
	}
	if len(names) == 0 {
		return fmt.Errorf("%w %q: tenant %s has no destinations", ErrUnknown, name, tenantID)
	}
	return fmt.Errorf("%w %q: tenant %s has destinations %s", ErrUnknown, name, tenantID, strings.Join(names, ", "))
}

// By names who paused a destination.
type By string

// Who pauses.
const (
	// Operator: a person, through scripts/destination (tenant.sh pause,
	// make pause) or the console.
	Operator By = "operator"
	// Auto: the worker, after the destination failed without a success
	// for Config.AutoPause.
	Auto By = "auto"
)

// MaxReason is the longest reason kept, in bytes; a longer failure is cut.
const MaxReason = 500

// Pause is a destination's pause: zero when it is not paused.
type Pause struct {
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
	By     By        `json:"by"`
}

// Failing is a destination's failure streak: zero when its last delivery
// succeeded (or none failed).
type Failing struct {
	// Since is the first failure after the last success.
	Since time.Time `json:"since"`
	// Reason is that failure's (a forward.Error's text: a status or a
	// transport failure, never a URL, header or body).
	Reason string `json:"reason"`
}

// State is one destination's state. The zero State is a healthy
// destination that is not paused, the state of every destination the
// store has nothing about.
type State struct {
	Paused  Pause   `json:"paused,omitzero"`
	Failing Failing `json:"failing,omitzero"`
}

// IsPaused reports whether the destination is paused.
func (s State) IsPaused() bool { return !s.Paused.Since.IsZero() }

// IsFailing reports whether the destination's last delivery failed.
func (s State) IsFailing() bool { return !s.Failing.Since.IsZero() }

// States are a tenant's destinations' states by name; a name absent has
// the zero State.
type States map[string]State

// Describe is the pause as a person reads it at now.
func (p Pause) Describe(now time.Time) string {
	return fmt.Sprintf("paused since %s (%s ago) by %s: %s", p.Since.UTC().Format(time.RFC3339), now.Sub(p.Since).Round(time.Second), p.By, p.Reason)
}

// Describe is the state as a person reads it at now.
func (s State) Describe(now time.Time) string {
	switch {
	case s.IsPaused():
		return s.Paused.Describe(now)
	case s.IsFailing():
		return fmt.Sprintf("delivering; failing since %s (%s) without a success: %s",
			s.Failing.Since.UTC().Format(time.RFC3339), now.Sub(s.Failing.Since).Round(time.Second), s.Failing.Reason)
	}
	return "delivering"
}

// Poll bounds of a paused destination's messages.
const (
	// MinPoll is how often a message waiting for a destination paused
	// less than pollShare minutes ago comes back to look: a short pause
	// (maintenance) drains within about a minute of its resume.
	MinPoll = time.Minute
	// MaxPoll is SQS's longest visibility timeout.
	MaxPoll = 12 * time.Hour
	// pollShare: a message comes back after a tenth of the pause's age,
	// so a pause of any length costs a message few receives (10 in the
	// first 10 minutes, then about 10·ln(age/10 min): 51 over 8 hours, 74
	// over 3 days, 94 over 12), far below the queue's maxReceiveCount, and
	// the backlog comes back at most a tenth of the pause's age after its
	// resume.
	pollShare = 10
)

// Poll is how long a message waiting for a destination paused for
// pausedFor stays invisible before it looks again, in whole seconds (the
// unit of SQS's visibility timeout).
func Poll(pausedFor time.Duration) time.Duration {
	return min(max(pausedFor/pollShare, MinPoll), MaxPoll).Truncate(time.Second)
}

// step is the write Failed decides on the state seen.
type step int

const (
	stepNone step = iota
	// stepStart records the first failure after a success.
	stepStart
	// stepPause pauses the destination: it has failed since longer than
	// the auto-pause time without a success.
	stepPause
)

// planFailed decides what a failure at now changes, on the state seen:
// the first failure starts a streak; a failure at least after past the
// streak's start pauses the destination (after ≤ 0: never); any other
// failure, or one of a paused destination, writes nothing.
func planFailed(seen State, now time.Time, after time.Duration) step {
	switch {
	case seen.IsPaused():
		return stepNone
	case !seen.IsFailing():
		return stepStart
	case after > 0 && now.Sub(seen.Failing.Since) >= after:
		return stepPause
	}
	return stepNone
}

// AutoReason is the reason of an auto-pause: the streak's age and start,
// and the failure that ended it.
func AutoReason(f Failing, now time.Time, last string) string {
	return cut(fmt.Sprintf("no success for %s (failing since %s); last failure: %s",
		now.Sub(f.Since).Round(time.Minute), f.Since.UTC().Format(time.RFC3339), last))
}

// check validates a destination's key.
func check(tenantID, name string) error {
	if err := checkTenant(tenantID); err != nil {
		return err
	}
	if err := tenant.CheckName(name); err != nil {
		return fmt.Errorf("%w: destination name %q: %v", ErrInvalid, name, err)
	}
	return nil
}

// CheckReason validates an operator's reason: 1 to MaxReason bytes of
// printable text (it reaches alerts, logs and pages).
func CheckReason(reason string) error {
	switch {
	case strings.TrimSpace(reason) == "":
		return fmt.Errorf("%w: a reason is required (say why, for whoever finds it paused)", ErrInvalid)
	case len(reason) > MaxReason:
		return fmt.Errorf("%w: reason longer than %d bytes", ErrInvalid, MaxReason)
	case strings.IndexFunc(reason, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("%w: reason holds a control character", ErrInvalid)
	}
	return nil
}

// cut shortens a failure's reason to MaxReason bytes on a rune boundary.
func cut(s string) string {
	if len(s) <= MaxReason {
		return s
	}
	s = s[:MaxReason]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// checkTenant validates a tenant id.
func checkTenant(tenantID string) error {
	if err := tenantid.Validate(tenantID); err != nil {
		return fmt.Errorf("%w: tenant: %v", ErrInvalid, err)
	}
	return nil
}

// checkPause validates an operator's pause.
func checkPause(tenantID, name, reason string) error {
	if err := check(tenantID, name); err != nil {
		return err
	}
	return CheckReason(reason)
}

// ms is t as stored: whole milliseconds, UTC.
func ms(t time.Time) time.Time { return epoch.FromMillis(epoch.Millis(t)) }
