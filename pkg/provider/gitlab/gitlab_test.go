package gitlab

import (
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// An issue event as GitLab's "Webhook events" page shows it, trimmed.
const issueBody = `{"object_kind":"issue","event_type":"issue","project":{"id":1,"path_with_namespace":"gitlabhq/gitlab-test"},"object_attributes":{"id":301,"iid":23,"title":"New API: create/update/delete file","action":"open"}}`

func request() *webhook.Request {
	return providertest.Request(map[string]string{
		"Content-Type": "application/json", "X-Gitlab-Event": "Issue Hook",
		"X-Gitlab-Event-UUID": "13792a34-cac6-4fda-95a8-c58e00a3954e", "X-Gitlab-Webhook-UUID": "a1e5b8c4-0000-4000-8000-000000000001",
		"Idempotency-Key": "f5e5f430-f57b-4e6e-9fac-d9128cd7232f", "X-Gitlab-Instance": "https://gitlab.com",
	}, issueBody)
}

func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Case{
		Provider:     Provider{},
		Request:      request,
		Signature:    Header,
		BodyUnsigned: true,
		OtherEvent:   providertest.Header("Idempotency-Key", "0b3a9f3e-another-event"),
		// GitLab keeps Idempotency-Key across the retries of one event,
		// automatic or from "Resend request", and gives the request a new
		// X-Gitlab-Webhook-UUID (docs.gitlab.com/user/project/integrations/webhooks/#delivery-headers).
		Retry: func(r *webhook.Request) {
			r.Header.Set("X-Gitlab-Webhook-UUID", "a1e5b8c4-0000-4000-8000-000000000002")
		},
		Reused: func(r *webhook.Request) {
			r.Body = []byte(strings.Replace(issueBody, `"action":"open"`, `"action":"close"`, 1))
		},
		Unsigned: []string{"X-Gitlab-Event-UUID", "X-Gitlab-Webhook-UUID"},
		Vectors: []providertest.Vector{
			providertest.SampleVector(t, "gitlab", "issue-open", Header),
		},
		Tampers: []providertest.Change{
			{Name: "token with a suffix", Apply: func(r *webhook.Request) { r.Header.Set(Header, r.Header.Get(Header)+"x") }},
		},
		Malformed: []providertest.Change{
			{Name: "not JSON", Apply: providertest.Body("{")},
			{Name: "not an object", Apply: providertest.Body("[1]")},
		},
	})
}

func TestEvents(t *testing.T) {
	tests := []struct {
		name, body, idem, wantID, wantType, wantConv string
	}{
		{"issue", issueBody, "k1", "k1", "issue", "1:issue:23"},
		{"note on a merge request", `{"object_kind":"note","project_id":5,"merge_request":{"iid":7}}`, "k2", "k2", "note", "5:merge_request:7"},
		{"pipeline", `{"object_kind":"pipeline","project":{"id":5},"object_attributes":{"id":31}}`, "", "", "pipeline", "5:pipeline:31"},
		{"job joins its pipeline", `{"object_kind":"build","project_id":5,"pipeline_id":31}`, "", "", "build", "5:pipeline:31"},
		{"push", `{"object_kind":"push","project_id":5,"ref":"refs/heads/main"}`, "", "", "push", "5"},
		{"system hook", `{"event_name":"project_create","project_id":74}`, "", "", "project_create", "74"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := providertest.Request(map[string]string{"Idempotency-Key": tt.idem}, tt.body)
			providertest.WantEvent(t, Provider{}, r, webhook.Config{}, webhook.Event{ID: tt.wantID, Type: tt.wantType, Conversation: tt.wantConv})
		})
	}
}

func TestCheck(t *testing.T) {
	providertest.Misconfigured(t, Provider{}, webhook.Config{}, "secrets")
	if err := (Provider{}).Check(webhook.Config{Secrets: []string{"t"}}); err != nil {
		t.Errorf("Check(a token) = %v", err)
	}
}
