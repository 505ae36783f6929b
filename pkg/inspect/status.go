package inspect

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoDeadLetter: a replay's selection matched no dead letter (scripts/replay
// exits 3, as inspect does for an unknown event).
var ErrNoDeadLetter = errors.New("no dead letter selected")

// ExitStatus is the exit status of the operator tools (scripts/inspect,
// scripts/replay) for err, the same for the same situation, so a script
// can branch on it: 0 nil; 2 input to fix, refused or naming nothing
// (ErrMalformed, ErrUnknownTenant, ErrNotCoreStack); 3 nothing found
// (ErrUnknownEvent, ErrNoDeadLetter); 1 anything else (a failed call).
func ExitStatus(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrUnknownTenant), errors.Is(err, ErrNotCoreStack):
		return 2
	case errors.Is(err, ErrUnknownEvent), errors.Is(err, ErrNoDeadLetter):
		return 3
	}
	return 1
}

// NotDeadLettered returns why a replay of the event ref selected no dead
// letter of it, from Inspect's answer for ref (its journeys, or its error):
// an error wrapping ErrNoDeadLetter that says, per event ref names, "not
// dead-lettered: STATE (why)", "not in the DLQ (STATE: why)", or "no such
// event (…)" (wrapping ErrUnknownEvent too). Any other error of Inspect is
// returned as it is.
func NotDeadLettered(ref string, js []Journey, err error) error {
	switch {
	case errors.Is(err, ErrUnknownEvent):
		return fmt.Errorf("%w: event %s: no such event (%w)", ErrNoDeadLetter, ref, err)
	case err != nil:
		return err
	}
	why := make([]string, len(js))
	for i, j := range js {
		state := strings.ToUpper(string(j.State)) + " (" + j.Why + ")"
		switch {
		case j.DeadLetter != nil:
			why[i] = "in the DLQ when it was looked up, but not selected: the other filters exclude it, or it left the DLQ since (" + j.DeadLetter.MessageID + ")"
		case j.State == StateDeadLettered || j.State == StateReplaying:
			why[i] = "not in the DLQ (" + strings.ToUpper(string(j.State)) + ": " + j.Why + ")"
		default:
			why[i] = "not dead-lettered: " + state
		}
		why[i] = "event " + j.Key + ": " + why[i]
	}
	if len(why) == 0 {
		return fmt.Errorf("%w: event %s: no such event", ErrNoDeadLetter, ref)
	}
	return fmt.Errorf("%w: %s", ErrNoDeadLetter, strings.Join(why, "; "))
}
