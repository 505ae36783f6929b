package inspect

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/worker"
)

// EffectState is an effect's state as an operator reads it, which the
// ledger's status alone does not say: the forward's INPROGRESS record of a
// deleted message is done (docs/ledger.md), a COMPLETED record with a
// DeadMessage is done while its event is dead-lettered.
type EffectState string

// Effect states.
const (
	EffectDone       EffectState = "done"
	EffectDead       EffectState = "dead"
	EffectInProgress EffectState = "in progress"
	EffectRetrying   EffectState = "failed, retrying"
)

// readEffect decides e's state and the sentence that says why, from its
// record, the tenant's queue (a forward's INPROGRESS record counts as done
// once its lease has ended or nothing is in flight: its completion is its
// message's deletion), whether the event's dead letter is in the DLQ, and
// now, which ends leases.
func readEffect(e Effect, q Depth, deadLetter bool, now time.Time) (EffectState, string) {
	again := "when its message is received again"
	if deadLetter {
		again = "when its dead letter is replayed"
	}
	live := e.LeaseExpires.After(now)
	switch {
	case e.Status == ledger.StatusCompleted && e.DeadMessage != "":
		return EffectDone, "done before its event was dead-lettered from message " + e.DeadMessage + " (" + e.Reason + "); a replay skips it"
	case e.Status == ledger.StatusCompleted:
		return EffectDone, "completed"
	case e.Status == ledger.StatusDead:
		return EffectDead, "dead-lettered from message " + e.DeadMessage + " (" + e.Reason + "); runs again only through a replay"
	case e.Status == ledger.StatusFailed:
		return EffectRetrying, "failed; runs again " + again
	case isForward(e.Name) && (!live || q.InFlight == 0):
		// Completion by deletion (docs/ledger.md): its claim was its only write.
		return EffectDone, "forwarded (the ledger's record stays INPROGRESS: its completion is its message's deletion)"
	case live:
		return EffectInProgress, "a worker holds its lease until " + stamp(e.LeaseExpires)
	default:
		return EffectRetrying, "interrupted (its worker stopped while it ran); runs again " + again
	}
}

// isForward reports whether effect name is the forward (the event's own
// record) or a destination's (worker.DestinationEffect): both are
// completed by their message's deletion.
func isForward(name string) bool {
	return name == worker.ForwardEffect || strings.HasPrefix(name, worker.ForwardEffect+":")
}

// countState counts the effects in state s.
func countState(effects []Effect, s EffectState) int {
	n := 0
	for _, e := range effects {
		if e.State == s {
			n++
		}
	}
	return n
}

// unrecorded says why the event has no record of a destination's effect,
// from its state: a destination is claimed only when its filter selects the
// event and, with a rate, once its slot came.
func unrecorded(s State) string {
	switch s {
	case StateDone:
		return "not selected by its filter (the event is done)"
	case StateDeadLettered, StateReplaying:
		return "not selected by its filter, or it was waiting for its rate when the event was dead-lettered"
	}
	return "not selected by its filter, or not started yet (waiting for its rate, or for the worker)"
}

// newestDeadLetter returns the newest dead letter of key among dead (the
// one a replay dead-lettered again, when the older is still listed), or
// nil.
func newestDeadLetter(dead []replay.Item, key string) *replay.Item {
	var newest *replay.Item
	for i := range dead {
		if dead[i].EventKey == key && (newest == nil || dead[i].SentAt.After(newest.SentAt)) {
			newest = &dead[i]
		}
	}
	return newest
}

// judge sets j's state, each effect's state and meaning, each
// destination's own state (dead: the tenant's listed dead letters), and
// the notes.
func (in *Inspector) judge(j *Journey, q Query, dead []replay.Item, now time.Time) {
	for i := range j.Effects {
		e := &j.Effects[i]
		e.State, e.Meaning = readEffect(*e, j.Queue, j.DeadLetter != nil, now)
	}
	j.State, j.Why = decide(*j, now)
	if len(j.Destinations) > 0 {
		recorded := 0
		for i, d := range j.Destinations {
			if slices.ContainsFunc(j.Effects, func(e Effect) bool { return e.Name == d.Effect }) {
				recorded++
				continue
			}
			j.Destinations[i].Meaning = "no record: " + unrecorded(j.State)
		}
		for i := range j.Effects {
			if e := &j.Effects[i]; e.Name == worker.ForwardEffect && e.State == EffectDone && e.Status == ledger.StatusInProgress {
				e.Meaning = "the event's own record (it stays INPROGRESS: its completion is its message's deletion); each destination has its own"
			}
		}
		if recorded == 0 && j.State == StateDone {
			j.Why = "filtered: no destination's filter selects it (done, delivered nowhere)"
		}
		// With streams, an event no destination selects is queued on the
		// custom effects' stream alone, done without a ledger write (decide
		// reads the worker's filtered line, which a deployed stack drops as
		// DEBUG): once the queue holds nothing, it is not waiting there.
		if j.State == StateQueued && recorded == 0 && j.Queue.Visible+j.Queue.InFlight+j.Queue.Delayed == 0 {
			j.State, j.Why = StateDone, "filtered: no destination's filter selects it (done, delivered nowhere: no destination has a record of it, and the queue holds no message)"
		}
		// A message waiting for a rate gives the event's record up (FAILED)
		// with the reason, as does a destination a 429 paused: no attempt.
		paced := 0
		for i := range j.Effects {
			e := &j.Effects[i]
			if e.State != EffectRetrying || !strings.Contains(e.Reason, worker.ErrPaced.Error()) {
				continue
			}
			paced++
			reason := e.Reason
			if name, ok := strings.CutPrefix(e.Name, worker.ForwardEffect+":"); ok && len(pacedFor(reason)) == 0 {
				reason = "destination " + name + ": " + reason // a 429 of its own target
			}
			e.Meaning = pacedText(Run{Error: reason}) + "; runs again when the slot is due"
		}
		if j.State == StateRetrying && paced > 0 && paced == countState(j.Effects, EffectRetrying) {
			j.Why = pacedText(Run{Error: j.Effects[slices.IndexFunc(j.Effects, func(e Effect) bool { return e.State == EffectRetrying })].Reason}) +
				": its message comes back when the slot is due"
		}
		// So does a message waiting for a paused destination, with the
		// pause as the reason (package destination).
		for i := range j.Effects {
			e := &j.Effects[i]
			if e.State != EffectRetrying || !strings.Contains(e.Reason, worker.ErrPaused.Error()) {
				continue
			}
			e.Meaning = "not an attempt; runs again once the destination is resumed"
			if j.State == StateRetrying {
				j.Why = e.Reason + " (not an attempt): its message comes back to look until the destination is resumed"
			}
		}
	}
	ownStates(j, dead)
	if j.State == StateRetrying {
		if j.Next = nextAttempt(*j, in.cfg.Deployment.MaxAttempts); j.Next != nil {
			j.Why += "; " + j.Next.String()
		}
	}
	if replayed := slices.ContainsFunc(j.Messages, func(m Message) bool { return m.Replay }); replayed &&
		(j.State == StateInFlight || j.State == StateRetrying || j.State == StateQueued) {
		j.Why += " (a replay of its dead letter, the worker log shows)"
	}
	j.History = history(*j)
	if in.cfg.Runs != nil && j.State == StateDone && !slices.ContainsFunc(j.Runs, func(r Run) bool {
		return r.Outcome == "processed" || r.Outcome == "skipped_duplicate" || r.Outcome == "filtered"
	}) {
		j.Notes = append(j.Notes, "the worker log has no line of its last attempt: the worker logs a message done at DEBUG, "+
			"which a deployed stack's log level (INFO) drops; done is the ledger's word")
	}
	if j.DeadLetter != nil {
		j.Notes = append(j.Notes, fmt.Sprintf("replay once the cause is fixed: %s "+
			"(completed effects are skipped; the forward is sent again with the same webhook-id)",
			in.cfg.Deployment.replayCommand(q.Tenant, j.DeadLetter.GroupID, j.Queue.QueueURL)))
	}
	for _, d := range j.Destinations {
		// Another destination's dead letter of the event: on its own
		// stream's group, which a redrive of that group moves alone.
		if dl := d.DeadLetter; dl != nil && j.DeadLetter != nil && dl.MessageID != j.DeadLetter.MessageID {
			j.Notes = append(j.Notes, fmt.Sprintf("%s's dead letter of it is replayed with %s", d.Name,
				in.cfg.Deployment.replayCommand(q.Tenant, dl.GroupID, j.Queue.QueueURL)))
		}
	}
	if j.State == StateUnknown {
		return
	}
	if j.State == StateDone {
		i := slices.IndexFunc(j.Effects, func(e Effect) bool {
			return e.Name == worker.ForwardEffect && e.Status == ledger.StatusInProgress
		})
		if i >= 0 && j.Queue.Visible+j.Queue.InFlight+j.Queue.Delayed > 0 {
			j.Notes = append(j.Notes, "the forward's completion is its message's deletion, which SQS does not show: "+
				"had its worker crashed mid-forward, the message would wait for a retry in the queue, which holds messages now")
		}
	}
	if j.Claim != nil {
		if j.Claim.Expires.Before(now) {
			j.Notes = append(j.Notes, "the claim expired: a delivery of this key now would be accepted and queued again")
		} else if j.Claim.Status == idempotency.StatusCompleted {
			j.Notes = append(j.Notes, "verified and queued once; a repeat delivery until "+stamp(j.Claim.Expires)+
				" is answered duplicate (409 id reused when its payload digest differs)")
		}
	} else if len(j.Effects) > 0 {
		j.Notes = append(j.Notes, "the idempotency claim has expired (kept "+days(in.cfg.Deployment.DedupRetention)+"); the ledger keeps effects longer")
	}
	if !q.Scan {
		j.Notes = append(j.Notes, "looked up only "+lookedUp(q)+": name custom effects with -effects, or find them with -scan (a Scan of the ledger)")
	}
	if j.DeadLetter == nil && j.State != StateDone && j.State != StateDeadLettered && len(j.Runs) == 0 {
		j.Notes = append(j.Notes, "which queued message is this event, and its failed attempts so far, are not visible without receiving it "+
			"(SQS has no peek); the worker's log line has messageId and attempt for idempotencyKey "+j.Key)
	}
}

// decide returns where the event of j is and why, from its dead letter (the
// newest in the DLQ listing), its effects' states (readEffect), its claim
// and its queues' counts. The why never contradicts the queue's counts: a
// dead letter that is not listed is said to be hidden (a replay or a
// listing holds it), moved to the queue, or gone, as the counts show.
func decide(j Journey, now time.Time) (State, string) {
	var dead *Effect
	count := map[EffectState]int{}
	for i, e := range j.Effects {
		count[e.State]++
		if dead == nil && (e.Status == ledger.StatusDead || e.Status == ledger.StatusCompleted && e.DeadMessage != "") {
			dead = &j.Effects[i]
		}
	}
	queued := j.Queue.Visible + j.Queue.InFlight + j.Queue.Delayed
	switch {
	case j.DeadLetter != nil:
		return StateDeadLettered, "its message is in the tenant's DLQ: " + j.DeadLetter.Reason
	case dead != nil:
		from := "the worker dead-lettered it from message " + dead.DeadMessage + " (" + dead.Reason + "); "
		switch {
		case j.Queue.DeadLettersInFlight > 0:
			return StateReplaying, from + fmt.Sprintf("its dead letter is not in the DLQ listing while the DLQ hides %d (a redrive moves them, or a listing holds them): "+
				"being replayed, or listed by someone else", j.Queue.DeadLettersInFlight)
		case j.Queue.DeadLetters > 0:
			return StateDeadLettered, from + fmt.Sprintf("its dead letter is not among those listed of the DLQ's %d (the listing sees the first ten of each conversation)", j.Queue.DeadLetters)
		case queued > 0:
			return StateReplaying, from + fmt.Sprintf("its dead letter has left the DLQ and the queue holds %d messages: a replay moved it there, and it waits for a worker", queued)
		default:
			return StateDeadLettered, from + "its dead letter is no longer in the DLQ, which is empty, and the queue holds nothing: past the DLQ's retention, or deleted; no replay is under way"
		}
	case j.Claim == nil && len(j.Effects) == 0:
		return StateUnknown, "no claim, no effect record, no dead letter"
	case count[EffectRetrying] > 0:
		return StateRetrying, "an effect failed or was interrupted; its message is received again after its backoff"
	case count[EffectInProgress] > 0:
		return StateInFlight, "a worker holds an effect's lease"
	case len(j.Effects) == 0 && j.Claim.Status == idempotency.StatusInProgress:
		if !j.Claim.LeaseExpires.After(now) {
			return StateReceiving, "an earlier version of the ingest claimed the key and never completed it (its invocation failed); the sender's retry sends it and records it"
		}
		return StateReceiving, "an earlier version of the ingest claimed the key and has not queued the event yet"
	case len(j.Effects) == 0 && slices.ContainsFunc(j.Runs, func(r Run) bool { return r.Outcome == "filtered" }):
		// A tenant with streams: the message of its custom effects, which
		// it has none of, is done without a record, and no destination's
		// stream got the event.
		return StateDone, "filtered: no destination's filter selects it (done, delivered nowhere)"
	case len(j.Effects) == 0:
		return StateQueued, fmt.Sprintf("the claim is completed (queued) and no effect has started: it waits in the queue (%d visible, %d in flight, %d delayed), "+
			"possibly behind an earlier event of its conversation", j.Queue.Visible, j.Queue.InFlight, j.Queue.Delayed)
	default:
		return StateDone, "every effect recorded is done"
	}
}

// NextAttempt is when a retrying event runs again, from what the stores
// know: SQS does not show a message's visibility, so it comes from the
// worker's log line of the last failed receive (its time plus the backoff
// it set), and the attempts from the ledger's count.
type NextAttempt struct {
	// MessageID is the message the worker log last names.
	MessageID string `json:"messageId"`
	// Failed is its failed attempts, the ledger's count; MaxAttempts the
	// worker's (0: not known, or no limit), at which it is dead-lettered.
	Failed      int `json:"failed"`
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// LastRun is the time of its last log line; At is when it is visible
	// again for the next attempt (zero: the line set no backoff, and the
	// queue's visibility timeout brings it back).
	LastRun time.Time `json:"lastRun"`
	At      time.Time `json:"at,omitzero"`
}

// nextAttempt returns j's next attempt from its last run and the ledger's
// count of that message's failed attempts, or nil without a run.
func nextAttempt(j Journey, maxAttempts int) *NextAttempt {
	if len(j.Runs) == 0 {
		return nil
	}
	last := j.Runs[len(j.Runs)-1] // runs sorts them by time
	n := &NextAttempt{MessageID: last.MessageID, MaxAttempts: maxAttempts, LastRun: last.Time, At: last.VisibleAgain}
	if i := slices.IndexFunc(j.Messages, func(m Message) bool { return m.ID == last.MessageID }); i >= 0 {
		n.Failed = j.Messages[i].FailedAttempts
	}
	return n
}

// String says the attempt and when the next one comes.
func (n NextAttempt) String() string {
	of := ""
	if n.MaxAttempts > 0 {
		of = fmt.Sprintf(" of %d", n.MaxAttempts)
	}
	s := fmt.Sprintf("attempt %d%s failed (message %s); the next, %d%s,", n.Failed, of, n.MessageID, n.Failed+1, of)
	if n.Failed == 0 {
		s = fmt.Sprintf("no attempt of message %s failed yet; attempt 1%s", n.MessageID, of)
	}
	if n.At.IsZero() {
		return s + " when the queue's visibility timeout brings it back (its last log line, " + stamp(n.LastRun) + ", set no backoff)"
	}
	return s + " at ≈ " + stamp(n.At) + ", when the worker's backoff makes it visible again (set at " + stamp(n.LastRun) + ")"
}
