package tenant

import (
	"strings"
	"testing"
)

// TestAddHoldsReceivesAgainstAttempts: tenant.sh add refuses a tenant queue
// whose maxReceiveCount SQS would reach before the core stack's worker gives
// up on a failing message with its reason (worker.MinMaxReceiveCount of
// WorkerMaxAttempts: 320 for 30, 420 for 40), whether the count comes from
// MAX_RECEIVE_COUNT, the template's default (280) on create, or the tenant
// stack's current value on update after WorkerMaxAttempts grew; a refused
// add changes no stack.
func TestAddHoldsReceivesAgainstAttempts(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ownCore(t, "hr", "WorkerMaxAttempts=30")
	type step struct {
		name  string
		extra []string
		ok    bool
		want  string // in the output
		stack string // the tenant stack's MaxReceiveCount after it ("": no stack)
	}
	run := func(steps ...step) {
		t.Helper()
		for _, s := range steps {
			out, err := e.tenant(t, s.extra, "add", "rc", "in.json")
			if (err == nil) != s.ok || !strings.Contains(out, s.want) {
				t.Fatalf("%s: tenant.sh add rc with %v = %v\n%s\nwant ok %v and %q", s.name, s.extra, err, out, s.ok, s.want)
			}
			if s.stack == "" {
				if n := e.depth(t, e.core+"_rc.fifo"); n != -1 {
					t.Errorf("%s: a refused add created the tenant's queue", s.name)
				}
				continue
			}
			got := e.aws(t, "cloudformation", "describe-stacks", "--stack-name", e.core+"-tenant-rc",
				"--query", "Stacks[0].Parameters[?ParameterKey=='MaxReceiveCount'].ParameterValue", "--output", "text")
			if strings.TrimSpace(got) != s.stack {
				t.Errorf("%s: the tenant stack's MaxReceiveCount = %s, want %s", s.name, got, s.stack)
			}
		}
	}
	run(
		step{"the template's default", nil, false, "MaxReceiveCount 280 is below 320, the least for the core stack's WorkerMaxAttempts 30", ""},
		step{"one too few", []string{"MAX_RECEIVE_COUNT=319"}, false, "set MAX_RECEIVE_COUNT=320 or more", ""},
		step{"enough", []string{"MAX_RECEIVE_COUNT=320"}, true, "webhook URL", "320"},
		step{"an update to too few", []string{"MAX_RECEIVE_COUNT=300"}, false, "MaxReceiveCount 300 is below 320", "320"},
		step{"an update keeping its count", nil, true, "credentials updated", "320"},
	)
	// The core's WorkerMaxAttempts grows: the count the tenant stack kept
	// is too few until it is raised with it.
	e.aws(t, "cloudformation", "update-stack", "--stack-name", e.core, "--use-previous-template", "--capabilities", "CAPABILITY_IAM",
		"--parameters", "ParameterKey=WorkerMaxAttempts,ParameterValue=40")
	e.aws(t, "cloudformation", "wait", "stack-update-complete", "--stack-name", e.core)
	run(
		step{"kept after WorkerMaxAttempts grew", nil, false, "MaxReceiveCount 320 is below 420, the least for the core stack's WorkerMaxAttempts 40", "320"},
		step{"raised with it", []string{"MAX_RECEIVE_COUNT=420"}, true, "credentials updated", "420"},
	)
}
