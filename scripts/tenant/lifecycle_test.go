//go:build long

package tenant

import (
	"context"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// TestAddIngestRemove onboards a tenant with tenant.sh, has the real ingest
// handler accept a signed webhook for it with no code or core-stack change
// (the queue URL template finds the tenant stack's queue, the credentials
// are where the handler reads them), updates it, and removes it again.
func TestAddIngestRemove(t *testing.T) {
	t.Parallel()
	e := setup(t)
	q, dlq := e.core+"_acme.fifo", e.core+"_acme-dlq.fifo"

	out, err := e.tenant(t, []string{"MAX_RECEIVE_COUNT=300"}, "add", "acme", "in.json", "out.json")
	if err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	if !strings.Contains(out, "https://abc123.execute-api.us-east-1.amazonaws.com/webhooks/acme/<provider>") {
		t.Errorf("add printed no webhook URL:\n%s", out)
	}
	st := e.stackOutputs(t, e.core+"-tenant-acme")
	if st["status"] != "CREATE_COMPLETE" || st["tag:hookpack:core-stack"] != e.core || st["tag:hookpack:tenant"] != "acme" {
		t.Errorf("tenant stack = %v, want CREATE_COMPLETE tagged with core %s and tenant acme", st, e.core)
	}
	// The queue the core template's QUEUE_URL_TEMPLATE names for acme is the
	// one the tenant stack created.
	if want := queue.URL(coreQueueURLTemplate(t, e.core), "acme"); st["QueueUrl"] != want {
		t.Errorf("tenant stack QueueUrl = %s, core template's URL for acme = %s", st["QueueUrl"], want)
	}
	attrs, err := sqs.NewFromConfig(e.cfg).GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(e.queueURL(q)), AttributeNames: []sqsAttr{"All"},
	})
	if err != nil {
		t.Fatalf("tenant queue %s: %v", q, err)
	}
	if a := attrs.Attributes; a["FifoQueue"] != "true" || !strings.Contains(a["RedrivePolicy"], ":"+dlq) {
		t.Errorf("queue attributes = %v, want FIFO redriving to %s", a, dlq)
	}
	if fn := e.mappings(t)["arn:aws:sqs:"+awstest.Region+":"+account+":"+q]; !strings.Contains(fn, ":function:"+e.core+"-WorkerFunction") {
		t.Errorf("mapping of %s invokes %q, want the core stack's worker", q, fn)
	}

	if got := e.listedIDs(t); got != "acme" {
		t.Errorf("onboarded tenant ids = %q, want acme (ingest answers 404 to ids not listed)", got)
	}

	// The real ingest handler accepts a webhook for the new tenant.
	h := ingestHandler(t, e)
	resp, err := h.Handle(context.Background(), githubEvent(t))
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, "accepted") {
		t.Fatalf("ingest for the new tenant = %d %s, %v; want 200 accepted", resp.StatusCode, resp.Body, err)
	}
	if n := e.depth(t, q); n != 1 {
		t.Fatalf("%s holds %d messages after one webhook, want 1", q, n)
	}

	// Adding it again updates credentials and parameters, keeping the others.
	if out, err := e.tenant(t, []string{"TENANT_MAX_CONCURRENCY=9"}, "add", "acme", "in.json", "out.json"); err != nil || !strings.Contains(out, "credentials updated") {
		t.Fatalf("second add: %v\n%s", err, out)
	}
	params := e.aws(t, "cloudformation", "describe-stacks", "--stack-name", e.core+"-tenant-acme", "--query", "Stacks[0].Parameters[].[ParameterKey,ParameterValue]", "--output", "text")
	for _, want := range []string{"TenantMaxConcurrency\t9", "MaxReceiveCount\t300"} {
		if !strings.Contains(params, want) {
			t.Errorf("parameters after the update lack %q:\n%s", want, params)
		}
	}
	if _, err := tenant.NewSSM(ssm.NewFromConfig(e.cfg), "/"+e.core).Outbound(context.Background(), "acme"); err != nil {
		t.Errorf("outbound credentials after the update: %v", err)
	}
	// The routes the ingest reads: the destinations' names and filters.
	routes, err := ssm.NewFromConfig(e.cfg).GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String("/" + e.core + "/tenants/acme/routes"), WithDecryption: aws.Bool(true)})
	if err != nil {
		t.Errorf("routes parameter after add: %v", err)
	} else if v := strings.TrimSpace(aws.ToString(routes.Parameter.Value)); v != `{"streams":[]}` {
		t.Errorf("routes parameter after add = %s; want the targetUrl's, no streams", v)
	}

	if out, err := e.tenant(t, nil, "list"); err != nil || strings.TrimSpace(out) != "acme" {
		t.Errorf("list = %q, %v; want acme", out, err)
	}
	if out, err := e.tenant(t, nil, "remove", "acme"); err == nil || !strings.Contains(out, "still holds 1 messages") {
		t.Fatalf("remove with a queued message = %v %s, want refusal", err, out)
	}
	drain(t, e, q)

	if out, err := e.tenant(t, nil, "remove", "acme"); err != nil {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	if n, m := e.depth(t, q), e.depth(t, dlq); n != -1 || m != -1 {
		t.Errorf("after remove: queue depth %d, DLQ depth %d; want both deleted (-1)", n, m)
	}
	if _, err := ssm.NewFromConfig(e.cfg).GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String("/" + e.core + "/tenants/acme/routes")}); err == nil {
		t.Errorf("routes parameter still there after remove")
	}
	if _, err := tenant.NewSSM(ssm.NewFromConfig(e.cfg), "/"+e.core).Inbound(context.Background(), "acme", provider.Registry()); err == nil {
		t.Error("inbound credentials outlived the tenant")
	}
	if got := e.listedIDs(t); got != "" {
		t.Errorf("onboarded tenant ids after remove = %q, want none", got)
	}
}
