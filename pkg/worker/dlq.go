package worker

import (
	"fmt"
	"strings"

	"github.com/hookpack/hookpack/pkg/queue"
)

// Message attributes of a dead-lettered message. Messages SQS itself
// redrove after maxReceiveCount carry none of them.
const (
	// AttrReason is why the worker gave up (the permanent error).
	AttrReason = "hookpack.reason"
	// AttrAttempts is the number of attempts that failed, as counted in
	// the ledger (absent when the count could not be recorded). Receives in
	// which the message only waited behind an earlier failure of its
	// conversation are not attempts.
	AttrAttempts = "hookpack.attempts"
	// AttrGroupID is the original MessageGroupId (the DLQ message keeps it
	// as its own group too, so the conversation's order survives).
	AttrGroupID = "hookpack.groupId"
	// AttrMessageID is the original SQS message id.
	AttrMessageID = "hookpack.messageId"
	// AttrFailedAt is when the worker dead-lettered it (RFC 3339, UTC).
	AttrFailedAt = "hookpack.failedAt"
	// AttrEventKey is the event's idempotency key (queue.AttrEventKey),
	// from its envelope or, when the body could not be read, from the
	// message's identity attributes, which the dead letter keeps
	// (queue.Identity).
	AttrEventKey = queue.AttrEventKey
	// AttrReplayOf marks a message redriven from the DLQ (package replay)
	// with the DLQ message id it came from. Its effect claims never count an
	// earlier message's unfinished claim as done (ledger.Fence.Replay).
	AttrReplayOf = "hookpack.replayOf"
)

// maxReasonBytes keeps the reason attribute small next to a body that may
// be near the queue's size limit.
const maxReasonBytes = 512

// DLQURL returns the dead-letter queue of a source queue URL, by the naming
// of provision.QueuePair (pkg/local) and template.yaml: "…/<name>.fifo" becomes
// "…/<name>-dlq.fifo". It returns an error wrapping ErrNoDLQ for a URL that
// is not a FIFO queue's or that already names a dead-letter queue.
func DLQURL(sourceURL string) (string, error) {
	base, ok := strings.CutSuffix(sourceURL, ".fifo")
	name := base[strings.LastIndexByte(base, '/')+1:]
	if !ok || name == "" || strings.HasSuffix(name, "-dlq") {
		return "", fmt.Errorf("%w: %q is not a FIFO source queue URL", ErrNoDLQ, sourceURL)
	}
	return base + "-dlq.fifo", nil
}

// attrText makes s a valid SQS attribute value of at most about n bytes:
// valid UTF-8 without the control characters SQS rejects (a reason SQS
// refused would make the message impossible to dead-letter).
func attrText(s string, n int) string {
	cut := len(s) > n
	if cut {
		s = s[:n]
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if cut {
		s += "…"
	}
	return s
}
