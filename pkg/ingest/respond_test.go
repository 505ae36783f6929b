package ingest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/github"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// answering is GitHub's adapter with a synchronous answer, as Discord's
// interactions require one.
type answering struct{ github.Provider }

var _ webhook.Responder = answering{}

func (answering) Respond(_ *webhook.Request, _ webhook.Config, evs []webhook.Event) (webhook.Reply, bool) {
	if len(evs) != 1 || evs[0].Type != "issues" {
		return webhook.Reply{}, false
	}
	return webhook.Reply{Status: http.StatusOK, ContentType: "application/json", Body: `{"type":5}`, Headers: map[string]string{"X-Answer": "yes"}}, true
}

// TestResponderAnswersQueuedDeliveries: the answer replaces the JSON one
// once the event is queued (and for its duplicate), never when it was not
// queued, so the sender sees that failure.
func TestResponderAnswersQueuedDeliveries(t *testing.T) {
	f := newFixture(t)
	f.h.cfg.Providers = webhook.Registry{"github": answering{}}
	req := githubRequest("acme", acmeGitHubSecret, githubBody, "d-answer")

	f.q.fails = sendRounds
	if resp := f.do(t, req); resp.StatusCode != http.StatusServiceUnavailable || resp.Body == `{"type":5}` {
		t.Fatalf("delivery with SQS down = %d %s, want 503 and no answer", resp.StatusCode, resp.Body)
	}
	for _, name := range []string{"accepted", "duplicate"} {
		resp := f.do(t, req)
		if resp.StatusCode != http.StatusOK || resp.Body != `{"type":5}` || resp.Headers["content-type"] != "application/json" || resp.Headers["x-answer"] != "yes" ||
			resp.Headers["x-hookpack-status"] != name || resp.Headers["x-hookpack-event-ids"] != "d-answer" {
			t.Errorf("%s delivery = %d %v %s, want the provider's answer", name, resp.StatusCode, resp.Headers, resp.Body)
		}
	}
	if f.q.count() != 1 {
		t.Errorf("queued %d messages, want 1: the answer must not replace queuing", f.q.count())
	}
	if logs := f.logs.String(); !strings.Contains(logs, `"outcome":"accepted"`) || !strings.Contains(logs, `"outcome":"duplicate"`) {
		t.Errorf("log lines %s do not record the accepted and duplicate outcomes", f.logs)
	}

	other := githubRequest("acme", acmeGitHubSecret, githubBody, "d-answer")
	other.Headers["x-github-event"] = "push"
	if resp := f.do(t, other); resp.StatusCode != http.StatusOK || resp.Body == `{"type":5}` {
		t.Errorf("delivery Respond declines = %d %s, want the usual JSON answer", resp.StatusCode, resp.Body)
	}
}
