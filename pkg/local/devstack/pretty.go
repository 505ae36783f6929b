package devstack

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// Pretty is the slog.Handler `make run` logs with: one readable line per
// event per stage, derived from the functions' own structured lines (the
// same lines CloudWatch receives), e.g.
//
//	17:40:01.123 ingest  demo/stripe   evt_1  received → verified → queued → recorded  200  12.3ms
//	17:40:01.456 worker  demo/stripe   evt_1  effect applied (attempt 1)  45.0ms
//	17:40:01.457 target  demo/stripe   evt_1  applied
//
// EMF fields and other machine-only keys are dropped.
type Pretty struct {
	mu  *sync.Mutex
	w   io.Writer
	pre []slog.Attr
}

// NewPretty returns a handler writing to w.
func NewPretty(w io.Writer) *Pretty { return &Pretty{mu: &sync.Mutex{}, w: w} }

// Enabled reports true for debug and above: the worker logs a message done
// at DEBUG (Lambda drops it in AWS), and `make run` shows it.
func (p *Pretty) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelDebug }

// WithAttrs returns a handler that adds attrs to every line.
func (p *Pretty) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Pretty{mu: p.mu, w: p.w, pre: append(append([]slog.Attr{}, p.pre...), attrs...)}
}

// WithGroup is not used by the pack; groups are flattened.
func (p *Pretty) WithGroup(string) slog.Handler { return p }

// ingestStages spells out what an ingest outcome means stage by stage.
var ingestStages = map[string]string{
	"accepted":           "received → verified → queued → recorded",
	"duplicate":          "received → verified → duplicate (already queued)",
	"id_reused":          "received → verified → REFUSED: id reused with another payload (409)",
	"handshake":          "received → handshake answered",
	"rejected_signature": "received → REJECTED: signature",
	"rejected_stale":     "received → REJECTED: stale timestamp",
	"rejected_malformed": "received → REJECTED: malformed",
	"not_found":          "received → unknown tenant or provider",
	"error":              "received → ERROR (nothing recorded, sender retries)",
}

var workerStages = map[string]string{
	"processed":         "effect applied",
	"skipped_duplicate": "duplicate: effect already applied, skipped",
	"retried":           "failed, will retry",
	"dead_lettered":     "DEAD-LETTERED",
	"blocked":           "waiting behind an earlier message of its conversation",
	"fenced":            "fenced off (a newer worker owns the conversation)",
	"deadline":          "not started before the deadline, redelivered",
	"timed_out":         "still running at the batch's cut-off: a failed attempt, back after its lease",
}

// Handle writes one line.
func (p *Pretty) Handle(_ context.Context, r slog.Record) error {
	f := map[string]string{}
	for _, a := range p.pre {
		f[a.Key] = a.Value.String()
	}
	if r.Message == "batch" {
		return nil // the worker's per-batch metrics record
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "_aws" {
			f[a.Key] = a.Value.String()
		}
		return true
	})
	var b strings.Builder
	b.WriteString(r.Time.Format("15:04:05.000"))
	who := f["tenantId"] + "/" + f["provider"]
	switch {
	case r.Message == "webhook":
		stage := ingestStages[f["outcome"]]
		if stage == "" {
			stage = f["outcome"]
		}
		id := f["eventId"]
		if n := f["events"]; n != "" {
			id += " (+" + n + " events)"
		}
		fmt.Fprintf(&b, " ingest  %-22s %-28s %s  %s  %sms", who, id, stage, f["status"], f["durationMs"])
	case r.Message == "message":
		stage := workerStages[f["outcome"]]
		if stage == "" {
			stage = f["outcome"]
		}
		try := "receive " + f["receiveCount"]
		if f["attempt"] != "" {
			try = "attempt " + f["attempt"]
		}
		fmt.Fprintf(&b, " worker  %-22s %-28s %s (%s, group %s)  %sms", who, f["eventId"], stage, try, f["groupId"], f["durationMs"])
	case f["stage"] == "target":
		fmt.Fprintf(&b, " target  %-22s %-28s %s", who, f["eventId"], strings.TrimPrefix(r.Message, "target: "))
	default:
		fmt.Fprintf(&b, " %-7s %s", strings.ToLower(r.Level.String()), r.Message)
		for _, k := range []string{"tenantId", "targetUrl", "queueUrl", "idempotencyKey"} {
			if f[k] != "" {
				fmt.Fprintf(&b, " %s=%s", k, f[k])
			}
		}
	}
	if e := f["error"]; e != "" {
		fmt.Fprintf(&b, "  error: %s", e)
	}
	b.WriteByte('\n')
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := io.WriteString(p.w, b.String())
	return err
}
