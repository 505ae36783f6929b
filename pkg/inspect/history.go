package inspect

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/idempotency"
)

// Run is one worker log line of the event (package worker's one line per
// message): one receive of one of its messages and what came of it.
type Run struct {
	Time      time.Time `json:"time"`
	MessageID string    `json:"messageId"`
	// Outcome is the worker's: processed, retried, dead_lettered, blocked,
	// skipped_duplicate, …
	Outcome      string `json:"outcome"`
	ReceiveCount int    `json:"receiveCount"`
	// Attempt is the message's attempt the receive counted as (0: none,
	// e.g. it waited behind an earlier message of its conversation).
	Attempt int    `json:"attempt,omitempty"`
	Error   string `json:"error,omitempty"`
	// DurationMs is how long the worker took over the message, its
	// effects' calls included.
	DurationMs float64 `json:"durationMs,omitempty"`
	// ReplayedBy names the tool that moved the message back from the DLQ
	// ("scripts/replay", or "dlq-redrive": SQS's move task or a re-send
	// keeping the dead letter's attributes), and ReplayOf the dead letter
	// it moved (scripts/replay only); empty for a message the ingest sent.
	ReplayedBy string `json:"replayedBy,omitempty"`
	ReplayOf   string `json:"replayOf,omitempty"`
	// VisibleAgain is when the worker made the message visible again for
	// its next receive: the line's time plus the visibility timeout it set
	// (visibilitySec); zero when it set none or SQS refused it.
	VisibleAgain time.Time `json:"visibleAgain,omitzero"`
}

// runLog finds the worker log lines of an event's key.
type runLog interface {
	Runs(ctx context.Context, tenant, key string) ([]Run, error)
}

// workerLine is the part of the worker's log line that says what came of
// one message.
type workerLine struct {
	Time         time.Time `json:"time"`
	Msg          string    `json:"msg"`
	Tenant       string    `json:"tenantId"`
	Key          string    `json:"idempotencyKey"`
	MessageID    string    `json:"messageId"`
	Outcome      string    `json:"outcome"`
	ReceiveCount int       `json:"receiveCount"`
	Attempt      int       `json:"attempt"`
	Error        string    `json:"error"`
	DurationMs   float64   `json:"durationMs"`
	ReplayedBy   string    `json:"replayedBy"`
	ReplayOf     string    `json:"replayOf"`
	// VisibilitySec is set when the worker changed the message's visibility
	// (its backoff), VisibilityError when SQS refused the change.
	VisibilitySec   *int64 `json:"visibilitySec"`
	VisibilityError string `json:"visibilityError"`
}

// MatchRun returns the run a worker log line records for the event key of
// tenant, and whether the line is one. Other lines, and lines that are not
// JSON, are not.
func MatchRun(line []byte, tenant, key string) (Run, bool) {
	var l workerLine
	if key == "" || json.Unmarshal(line, &l) != nil || l.Msg != "message" || l.Tenant != tenant || l.Key != key {
		return Run{}, false
	}
	r := Run{Time: l.Time, MessageID: l.MessageID, Outcome: l.Outcome, ReceiveCount: l.ReceiveCount, Attempt: l.Attempt, Error: l.Error,
		DurationMs: l.DurationMs, ReplayedBy: l.ReplayedBy, ReplayOf: l.ReplayOf}
	if l.VisibilitySec != nil && l.VisibilityError == "" {
		r.VisibleAgain = l.Time.Add(time.Duration(*l.VisibilitySec) * time.Second)
	}
	return r, true
}

// Message is one SQS message of the event the worker's log names, and the
// attempts of it that failed as the ledger counted them.
type Message struct {
	ID             string `json:"id"`
	FailedAttempts int    `json:"failedAttempts"`
	// Replay: it came after the event was dead-lettered, and the ledger
	// lets only a replay run a dead-lettered event again.
	Replay bool `json:"replay,omitempty"`
}

// Step is one thing that happened to the event. A zero Time is now: the
// event's state, or what a store says without a time.
type Step struct {
	Time time.Time `json:"time,omitzero"`
	What string    `json:"what"`
}

// outcomes says what a worker's outcome means to an operator.
var outcomes = map[string]string{
	"processed":             "attempt done",
	"retried":               "attempt failed, retrying",
	"dead_lettered":         "dead-lettered",
	"blocked":               "waited behind an earlier message of its conversation",
	"skipped_duplicate":     "skipped: already done",
	"deadline":              "stopped at the invocation's deadline, retrying",
	"timed_out":             "timed out, retrying",
	"fenced":                "stopped: a newer message of its conversation holds it",
	"skipped_dead_lettered": "deleted: a copy of a dead-lettered event, not a replay of it",
	"superseded":            "deleted: a later message of its conversation holds it",
	"filtered":              "filtered: no destination's filter selects it",
	"paced":                 "waiting for a destination's rate (not an attempt)",
	"paused":                "waiting for a paused destination (not an attempt)",
}

// pacedText says which destinations' rates a paced run waited for, as its
// error names them.
func pacedText(r Run) string {
	names := pacedFor(r.Error)
	if len(names) == 0 {
		return outcomes["paced"]
	}
	for i, n := range names {
		names[i] = n + "'s"
	}
	rate := "rate"
	if len(names) > 1 {
		rate = "rates"
	}
	return "waiting for " + strings.Join(names, " and ") + " " + rate + " (not an attempt)"
}

// replays marks the messages of runs that are replays: the first line of a
// message after another message of the event was dead-lettered, unless the
// worker refused it as a copy. The worker's line does not carry the replay
// mark (hookpack.replayOf), so this is what the log shows of a replay.
func replays(runs []Run) map[string]bool {
	out := map[string]bool{}
	seen := map[string]bool{}
	dead := false
	for _, r := range runs {
		if !seen[r.MessageID] && dead && r.Outcome != "skipped_dead_lettered" {
			out[r.MessageID] = true
		}
		seen[r.MessageID] = true
		if r.Outcome == "dead_lettered" {
			dead = true
		}
	}
	return out
}

// replayStep says how r's message came back from the DLQ: by which tool
// when the worker's line names it, else as the log shows it.
func replayStep(r Run) string {
	switch {
	case r.ReplayedBy == "scripts/replay" && r.ReplayOf != "":
		return "replayed by scripts/replay: dead letter " + r.ReplayOf + " came back as message " + r.MessageID
	case r.ReplayedBy == "dlq-redrive":
		return "replayed by a DLQ redrive (SQS's move task, or a re-send keeping the dead letter's attributes): it came back as message " + r.MessageID
	case r.ReplayedBy != "":
		return "replayed by " + r.ReplayedBy + ": it came back as message " + r.MessageID
	}
	return "replayed: its dead letter came back as message " + r.MessageID +
		" (the ledger runs a dead-lettered event again only for a replay)"
}

// history returns what happened to the event of j in time order: each
// delivery and the ingest's answer (or the claim, when the log has none),
// each worker attempt, its dead-lettering, replays, and last the state it
// is in now (done at the time of its last attempt when the log has it).
func history(j Journey) []Step {
	var steps []Step
	for _, d := range j.Deliveries {
		s := "received: " + d.Outcome + " " + strconv.Itoa(d.Status) + ", eventId " + d.EventID
		if d.Outcome == "accepted" {
			s += " (verified and queued)"
		}
		steps = append(steps, Step{d.Time, s})
	}
	if len(j.Deliveries) == 0 && j.Claim != nil {
		s := "received and verified (its claim, ≈ to the second; the ingest log has no line of it)"
		if j.Claim.Status == idempotency.StatusCompleted {
			s += "; queued"
		}
		steps = append(steps, Step{j.Claim.Received, s})
	}
	runs := slices.Clone(j.Runs)
	slices.SortStableFunc(runs, func(a, b Run) int { return a.Time.Compare(b.Time) })
	replayed := replays(runs)
	seen := map[string]bool{}
	deadFrom := map[string]bool{}
	var done time.Time
	for _, r := range runs {
		if (replayed[r.MessageID] || r.ReplayedBy != "") && !seen[r.MessageID] {
			steps = append(steps, Step{r.Time, replayStep(r)})
		}
		seen[r.MessageID] = true
		what, ok := outcomes[r.Outcome]
		if !ok {
			what = r.Outcome
		}
		if r.Outcome == "paced" {
			what = pacedText(r)
		}
		s := what + ": message " + r.MessageID + ", receive " + strconv.Itoa(r.ReceiveCount)
		if r.Attempt > 0 {
			s += ", attempt " + strconv.Itoa(r.Attempt)
		}
		if r.Error != "" {
			s += ": " + r.Error
		}
		steps = append(steps, Step{r.Time, s})
		switch r.Outcome {
		case "dead_lettered":
			deadFrom[r.MessageID] = true
		case "processed", "skipped_duplicate", "filtered":
			done = r.Time
		}
	}
	if d := j.DeadLetter; d != nil && !deadFrom[d.OriginalMessageID] {
		at, err := time.Parse(time.RFC3339, d.FailedAt)
		if err != nil {
			at = d.SentAt
		}
		s := "dead-lettered from message " + d.OriginalMessageID + ": " + d.Reason + " (its dead letter's attributes)"
		if d.OriginalMessageID == "" {
			s = "moved to the DLQ by SQS after its maxReceiveCount (no reason recorded)"
		}
		steps = append(steps, Step{at, s})
		deadFrom[d.OriginalMessageID] = true
	}
	// What the stores say without a time comes after what the log dates.
	slices.SortStableFunc(steps, func(a, b Step) int { return a.Time.Compare(b.Time) })
	for _, e := range j.Effects {
		if e.DeadMessage != "" && !deadFrom[e.DeadMessage] {
			steps = append(steps, Step{What: "dead-lettered from message " + e.DeadMessage + ": " + e.Reason + " (the ledger's " + e.Name + " record; the log has no line of it)"})
			deadFrom[e.DeadMessage] = true
		}
	}
	if j.State == StateUnknown {
		return steps
	}
	last := Step{What: "now " + strings.ReplaceAll(string(j.State), "_", " ")}
	if j.State == StateDone {
		last = Step{Time: done, What: "done"}
	}
	return append(steps, last)
}
