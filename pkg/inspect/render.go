package inspect

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookpack/hookpack/pkg/replay"
)

// WriteJourney writes j for a terminal: one labelled line per store, then
// the notes. Like the Journey, it holds no body, header, secret or
// signature.
func WriteJourney(w io.Writer, j Journey) error {
	tw, line := table(w)
	line("event", "%s", j.Key)
	line("webhook-id", "%s", j.WebhookID)
	line("state", "%s: %s", strings.ToUpper(string(j.State)), j.Why)
	if c := j.Claim; c != nil {
		s := fmt.Sprintf("%s, received ≈ %s, deduplicated until %s, payload sha256 %s", c.Status, stamp(c.Received), stamp(c.Expires), short(c.PayloadDigest))
		if !c.LeaseExpires.IsZero() {
			s += ", ingest lease until " + stamp(c.LeaseExpires)
		}
		line("claim", "%s (claims are made after the signature check: verified)", s)
	} else {
		line("claim", "none")
	}
	line("queue", "%s", depthText(j.Queue))
	if d := j.DeadLetter; d != nil {
		line("dead letter", "%s", deadLetterText(*d, j.Attempts))
	}
	effects := make([]string, len(j.Effects))
	for i, e := range j.Effects {
		effects[i] = fmt.Sprintf("%s %s: %s; Idempotency-Key %s", e.Name, strings.ToUpper(string(e.State)), e.Meaning, e.IdempotencyKey)
		if e.Reason != "" {
			effects[i] += ", reason: " + e.Reason
		}
	}
	for _, d := range j.Destinations {
		if d.Meaning != "" {
			effects = append(effects, fmt.Sprintf("%s %s; filter %s", d.Effect, d.Meaning, d.filterText()))
		}
	}
	if len(effects) == 0 {
		line("effects", "none recorded")
	}
	own := make([]string, len(j.Destinations))
	for i, d := range j.Destinations {
		own[i] = ownStateText(d)
	}
	list(line, "effects", "", effects)
	list(line, "destinations", "", own)
	if p := j.Payload; p != nil {
		line("payload", "s3://%s/%s, %d bytes, stored %s", p.Bucket, p.Key, p.Size, stamp(p.Modified))
	} else {
		line("payload", "carried in the message (no offloaded object)")
	}
	attempts := make([]string, len(j.Messages))
	for i, m := range j.Messages {
		attempts[i] = fmt.Sprintf("message %s: %d failed", m.ID, m.FailedAttempts)
		if m.Replay {
			attempts[i] = fmt.Sprintf("message %s (a replay): %d failed", m.ID, m.FailedAttempts)
		}
	}
	if len(attempts) > 0 {
		line("attempts", "%s (the ledger's count)", strings.Join(attempts, "; "))
	}
	steps := make([]string, len(j.History))
	for i, st := range j.History {
		at := strings.Repeat(" ", len(time.RFC3339)-5) // a UTC stamp's width
		if !st.Time.IsZero() {
			at = stamp(st.Time)
		}
		steps[i] = at + " " + st.What
	}
	list(line, "history", "", steps)
	list(line, "notes", "- ", j.Notes)
	return tw.Flush()
}

// WriteSummary writes s for a terminal.
func WriteSummary(w io.Writer, s Summary) error {
	tw, line := table(w)
	line("tenant", "%s", s.Tenant)
	line("queue", "%s", depthText(s.Queue))
	if s.OldestMessageAgeSeconds != nil {
		line("oldest message", "%s old (CloudWatch ApproximateAgeOfOldestMessage)", (time.Duration(*s.OldestMessageAgeSeconds) * time.Second).String())
	}
	if s.OldestDeadLetter != nil {
		v := "sent to the DLQ " + stamp(*s.OldestDeadLetter)
		if s.DeadLetterExpires != nil {
			v += ", deleted by its retention at " + stamp(*s.DeadLetterExpires)
		}
		line("oldest dead letter", "%s", v)
	}
	reasons := make([]string, len(s.Reasons))
	for i, r := range s.Reasons {
		reasons[i] = fmt.Sprintf("%d × %s", r.Count, r.Reason)
	}
	list(line, "dead-letter reasons", "", reasons)
	var dests []string
	for _, d := range s.Destinations {
		dests = append(dests, paceText(d, s.Now), "  "+countsText(d))
		if f := failingText(d); f != "" {
			dests = append(dests, "  "+f)
		}
	}
	list(line, "destinations", "", dests)
	streams := make([]string, len(s.DeadLetterStreams))
	for i, c := range s.DeadLetterStreams {
		streams[i] = fmt.Sprintf("%d × %s", c.Count, c.Stream)
	}
	list(line, "dead letters by stream", "", streams)
	if len(s.Destinations) > 0 {
		list(line, "waiting", "", []string{"not counted per destination: SQS counts a queue's messages, not a stream's " +
			"(the queue line's visible, in flight and delayed hold every stream's)"})
	}
	list(line, "notes", "- ", s.Notes)
	return tw.Flush()
}

// table returns a writer of aligned "label  value" lines.
func table(w io.Writer) (*tabwriter.Writer, func(label, format string, args ...any)) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	return tw, func(label, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{label}, args...)...)
	}
}

// list writes items one per line, the label on the first only.
func list(line func(string, string, ...any), label, bullet string, items []string) {
	for i, it := range items {
		if i > 0 {
			label = ""
		}
		line(label, "%s%s", bullet, it)
	}
}

func depthText(d Depth) string {
	name := d.QueueURL[strings.LastIndexByte(d.QueueURL, '/')+1:]
	s := fmt.Sprintf("%s: %d visible, %d in flight, %d delayed; DLQ: %d", name, d.Visible, d.InFlight, d.Delayed, d.DeadLetters)
	if d.DeadLettersInFlight > 0 {
		s += fmt.Sprintf(" (+%d hidden)", d.DeadLettersInFlight)
	}
	return s
}

func deadLetterText(d replay.Item, attempts int) string {
	s := "message " + d.MessageID
	if d.OriginalMessageID != "" {
		s += " (was " + d.OriginalMessageID + ")"
	}
	s += ", conversation " + d.GroupID
	if d.Attempts != "" {
		s += ", attempts " + d.Attempts
	}
	if attempts >= 0 {
		s += fmt.Sprintf(" (ledger: %d failed)", attempts)
	}
	if d.FailedAt != "" {
		s += ", failed " + d.FailedAt
	}
	return s + ", reason: " + d.Reason
}

// short abbreviates a digest for the text output (JSON has it whole).
func short(digest string) string {
	if len(digest) > 16 {
		return digest[:16] + "…"
	}
	if digest == "" {
		return "(none)"
	}
	return digest
}

// paceText is a destination's line of a summary taken at now: its rate,
// its limiter, and when the tenant's backlog drains at its rate.
func paceText(d DestinationSummary, now time.Time) string {
	s := d.Name + ": " + d.rateText() + ", filter " + d.filterText()
	switch {
	case d.Paused != nil:
		return d.Name + ": " + d.Paused.Describe(now) +
			fmt.Sprintf("; its events wait (backlog %d queued for the tenant) until it is resumed", d.Backlog) +
			"; " + d.rateText() + ", filter " + d.filterText()
	case d.Failing != nil:
		s += fmt.Sprintf("; failing since %s (%s) without a success: %s", stamp(d.Failing.Since), now.Sub(d.Failing.Since).Round(time.Second), d.Failing.Reason)
	}
	l := d.Limiter
	switch {
	case l == nil:
		return s + fmt.Sprintf("; backlog %d queued for the tenant (no estimate without a rate)", d.Backlog)
	case l.Idle:
		s += "; limiter idle (unused for the last hour: its burst is ready)"
	default:
		s += "; limiter: next slot " + stamp(l.NextSlot)
		if !l.NextSlot.After(now) {
			s += " (free now)"
		}
		if !l.PausedUntil.IsZero() {
			s += ", paused by a 429 until " + stamp(l.PausedUntil)
		}
		if l.Factor < 1 {
			s += fmt.Sprintf(", at %.0f%% of its rate after 429s (back to 100%% within 30 s without one)", 100*l.Factor)
		}
		if l.Strikes > 0 {
			s += fmt.Sprintf(", %d of them in a row without Retry-After (each pause twice the last)", l.Strikes)
		}
	}
	switch {
	case d.DrainedBy != nil && len(d.FailingConversations) > 0:
		s += fmt.Sprintf("; backlog %d queued for the tenant: drained by ≈ %s at the earliest (in %s at %s, if every queued message is for it, no 429 slows it and nothing waits behind a failing conversation)",
			d.Backlog, stamp(*d.DrainedBy), d.DrainedBy.Sub(now).Round(time.Second), d.Rate)
		if d.DrainedLatest != nil {
			s += fmt.Sprintf(", by %s at the latest (all of it behind the failing conversations, then at %s)", stamp(*d.DrainedLatest), d.Rate)
		}
	case d.DrainedBy != nil:
		s += fmt.Sprintf("; backlog %d queued for the tenant: drained by ≈ %s (in %s at %s, if every queued message is for it and no 429 slows it)",
			d.Backlog, stamp(*d.DrainedBy), d.DrainedBy.Sub(now).Round(time.Second), d.Rate)
	default:
		s += "; backlog 0"
	}
	return s
}
