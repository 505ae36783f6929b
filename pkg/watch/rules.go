package watch

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hookpack/hookpack/pkg/destination"
)

// Rule names one condition the watch alerts on. The three rules are the
// ones each tenant stack used to carry as CloudWatch alarms, with the same
// thresholds.
type Rule string

// The rules.
const (
	// OldestMessage: the tenant's oldest queued message is older than its
	// threshold (the tenant stack's OldestMessageAlarmSeconds, default 900 s).
	OldestMessage Rule = "oldest-message"
	// DeadLetters: the tenant's DLQ holds at least one message.
	DeadLetters Rule = "dead-letters"
	// DeadLettersExpiring: the oldest dead letter is older than
	// DeadLetterExpiry (10 days of the DLQ's 14-day retention).
	DeadLettersExpiring Rule = "dead-letters-expiring"
	// DestinationPaused: one of the tenant's destinations is paused, by
	// an operator or by the worker (auto-pause), while its queue holds
	// messages: its events wait until it is resumed. One breach per
	// destination, naming it, who paused it and why.
	DestinationPaused Rule = "destination-paused"
)

// Defaults of a Watcher's settings.
const (
	// DefaultOldestMessage is template-tenant.yaml's OldestMessageAlarmSeconds default.
	DefaultOldestMessage = 900 * time.Second
	// DefaultDeadLetterExpiry fires while the oldest dead letter has 4 of its 14 days left.
	DefaultDeadLetterExpiry = 10 * 24 * time.Hour
	// DefaultGap: a breach not seen for longer has ended; seeing it again is
	// a new breach, notified at once. Three runs of the 5-minute schedule,
	// so one failed run does not end a breach.
	DefaultGap = 15 * time.Minute
	// DefaultStateRetention is how long a breach's state outlives its last
	// sighting (DynamoDB TTL), well past DefaultGap.
	DefaultStateRetention = 48 * time.Hour
	// DeadLetterRetention is template-tenant.yaml's DLQ MessageRetentionPeriod.
	DeadLetterRetention = 14 * 24 * time.Hour
)

// DefaultRepeat is how often a breach that lasts is notified again: a
// backlog hourly (an outage in progress), dead letters daily (a standing
// pile waits for a person, and the expiry rule names the deadline).
var DefaultRepeat = map[Rule]time.Duration{
	OldestMessage:       time.Hour,
	DeadLetters:         24 * time.Hour,
	DeadLettersExpiring: 24 * time.Hour,
	DestinationPaused:   24 * time.Hour,
}

// Observation is what one run learned of a tenant's queue pair. The ages
// are known (Known*) only when the run asked CloudWatch for them, which it
// does only for a queue that holds messages.
type Observation struct {
	Tenant string
	// Messages counts the queue's visible, in-flight and delayed messages;
	// DeadLetters the DLQ's visible and in-flight ones.
	Messages, DeadLetters int
	// OldestAge is the queue's ApproximateAgeOfOldestMessage, OldestDeadLetterAge
	// the DLQ's (latest 5-minute maximum).
	OldestAge, OldestDeadLetterAge           time.Duration
	KnownOldestAge, KnownOldestDeadLetterAge bool
	// OldestMessageThreshold is the tenant's OldestMessage threshold.
	OldestMessageThreshold time.Duration
	// Paused are the tenant's paused destinations by name, read only when
	// its queue holds messages (a pause with nothing waiting costs nothing
	// and alerts nobody).
	Paused map[string]destination.Pause
}

// Breach is a rule an observation breaks, with the numbers that break it.
type Breach struct {
	Tenant string
	Rule   Rule
	// Value and Threshold in the rule's unit: messages for DeadLetters,
	// seconds for the two age rules and for how long a destination has
	// been paused.
	Value, Threshold int64
	// Destination and Pause: DestinationPaused's destination and its pause.
	Destination string
	Pause       destination.Pause
}

// Breaches returns the rules o breaks at now, in the order of the rules
// above (paused destinations by name). The comparisons are the old
// alarms': GreaterThanThreshold.
func Breaches(o Observation, deadLetterExpiry time.Duration, now time.Time) []Breach {
	var out []Breach
	if o.KnownOldestAge && o.OldestAge > o.OldestMessageThreshold {
		out = append(out, Breach{Tenant: o.Tenant, Rule: OldestMessage, Value: seconds(o.OldestAge), Threshold: seconds(o.OldestMessageThreshold)})
	}
	if o.DeadLetters > 0 {
		out = append(out, Breach{Tenant: o.Tenant, Rule: DeadLetters, Value: int64(o.DeadLetters)})
	}
	if o.KnownOldestDeadLetterAge && o.OldestDeadLetterAge > deadLetterExpiry {
		out = append(out, Breach{Tenant: o.Tenant, Rule: DeadLettersExpiring, Value: seconds(o.OldestDeadLetterAge), Threshold: seconds(deadLetterExpiry)})
	}
	for _, name := range slices.Sorted(maps.Keys(o.Paused)) {
		p := o.Paused[name]
		out = append(out, Breach{Tenant: o.Tenant, Rule: DestinationPaused, Value: seconds(now.Sub(p.Since)), Destination: name, Pause: p})
	}
	return out
}

func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// State is what the watch remembers of one tenant's breach of one rule:
// when it began, when a run last saw it, when it was last notified. The
// zero State is "no breach remembered".
type State struct {
	Since, Seen, Notified time.Time
}

// Next decides, for a breach seen now, the state to remember and whether
// to notify: a breach with no state, or whose last sighting is more than
// gap ago (it ended in between), is new and notified; a breach that goes on
// is notified again once repeat has passed since the last notification.
func Next(st State, now time.Time, gap, repeat time.Duration) (State, bool) {
	if st.Seen.IsZero() || now.Sub(st.Seen) > gap {
		return State{Since: now, Seen: now, Notified: now}, true
	}
	st.Seen = now
	if now.Sub(st.Notified) >= repeat {
		st.Notified = now
		return st, true
	}
	return st, false
}

// Describe returns the breach as a person reads it.
func (b Breach) Describe() string {
	switch b.Rule {
	case OldestMessage:
		return fmt.Sprintf("its oldest queued event has waited %s (threshold %s): its target may be down (events are retrying) or the worker is throttled",
			time.Duration(b.Value)*time.Second, time.Duration(b.Threshold)*time.Second)
	case DeadLetters:
		return fmt.Sprintf("%d dead-lettered event(s) in its DLQ", b.Value)
	case DeadLettersExpiring:
		left := DeadLetterRetention - time.Duration(b.Value)*time.Second
		return fmt.Sprintf("its oldest dead letter is %s old (threshold %s); SQS deletes it 14 days after it arrived, in about %s",
			time.Duration(b.Value)*time.Second, time.Duration(b.Threshold)*time.Second, left.Round(time.Hour))
	case DestinationPaused:
		return fmt.Sprintf("its destination %s is %s; its events wait on the queue until it is resumed",
			b.Destination, b.Pause.Describe(b.Pause.Since.Add(time.Duration(b.Value)*time.Second)))
	}
	return string(b.Rule)
}
