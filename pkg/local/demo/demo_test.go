package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/provider/github"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
)

// TestEndToEnd runs what `make run` runs (HTTP API → ingest → FIFO queue →
// poller → worker → ledger → target) in-process on moto, sends the demo's
// deliveries, and asserts the guarantees the demo prints.
func TestEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	name := "e2e" + strings.ToLower(awstest.Name(t))[len(awstest.Name(t))-6:]
	logFile := filepath.Join(t.TempDir(), "functions.log") // the worker's lines, where the pause scenario reads its waits
	s, err := devstack.Start(ctx, devstack.Options{Name: name, TenantsFile: filepath.Join(awstest.ModuleRoot(), "events", "tenants.json"), Addr: "127.0.0.1:0", TargetAddr: "127.0.0.1:0", Endpoint: awstest.Moto(t), DynamoDBEndpoint: awstest.DynamoDBLocal(t), LogFile: logFile})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer s.ServeBackground(ctx)()

	// An effect from before the demo: the report must not count it.
	earlier := `{"action":"opened","issue":{"number":1},"repository":{"full_name":"octo/before"}}`
	req := providertest.Request(map[string]string{"X-GitHub-Event": "issues", "X-GitHub-Delivery": "before-the-demo"}, earlier)
	if code, resp := providertest.Post(t, s.URL()+"/webhooks/demo/github", github.Provider{}, req, s.Tenants.Tenants["demo"].Providers["github"]); code != 200 {
		t.Fatalf("delivery before the demo: %d %s", code, resp)
	}
	for len(s.Target.Applied()) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the delivery before the demo was never applied")
		case <-time.After(100 * time.Millisecond):
		}
	}

	f := s.Tenants
	var out bytes.Buffer
	rep, err := Run(ctx, Options{
		BaseURL: s.URL(), TargetURL: s.TargetURL(), Tenant: "demo", Providers: f.Tenants["demo"].Providers,
		SQS: sqs.NewFromConfig(s.AWS), DLQURL: s.Queues["demo"].DLQURL, Out: &out, Wait: 90 * time.Second,
	})
	rep.Print(&out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}

	// What the senders were answered.
	// The burst's deliveries overlap: each that read the key before one
	// recorded it sends the event too (accepted), SQS keeps one copy, and
	// the effects below are applied once.
	byOutcome := map[string]int{}
	burst := map[string]int{}
	for _, a := range rep.Answers {
		byOutcome[a.Outcome]++
		if a.Status >= 500 {
			t.Errorf("%s answered %d", a.Scenario, a.Status)
		}
		if a.Key == "burst" {
			burst[a.Outcome]++
		}
	}
	if burst["accepted"] < 1 || burst["accepted"]+burst["duplicate"] != 20 {
		t.Errorf("burst of 20 answered %v, want every one accepted or duplicate, one accepted at least", burst)
	}
	if byOutcome["duplicate"] < 4 {
		t.Errorf("duplicates answered = %d, want at least the 4 repeated deliveries", byOutcome["duplicate"])
	}

	// Effects: each exactly once, in order per conversation.
	seen := map[string]int{}
	var stripe, order1001 []string
	for _, a := range rep.Applied {
		seen[a.Provider+"/"+a.EventID]++
		if a.Provider == "stripe" {
			stripe = append(stripe, a.Type)
		}
		if a.Provider == "shopify" && strings.Contains(a.Conversation, "1001") {
			order1001 = append(order1001, a.Type)
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("effect %s applied %d times, want once", id, n)
		}
	}
	if want := Expected(rep.Answers); len(rep.Applied) != want || want != 16 {
		t.Errorf("applied %d effects, expected %d (want 16)", len(rep.Applied), want)
	}
	if got := strings.Join(stripe, ","); got != "customer.created,invoice.created,invoice.paid" {
		t.Errorf("stripe conversation applied as %s", got)
	}
	if got := strings.Join(order1001, ","); got != "orders/create,orders/paid,orders/fulfilled" {
		t.Errorf("shopify order 1001 applied as %q", got)
	}

	// The poison event is dead-lettered with its reason; the flaky one was
	// retried and applied once.
	if len(rep.Dead) != 1 || !strings.Contains(rep.Dead[0].Reason, "422") || !strings.Contains(rep.Dead[0].EventID, "evt_poison") {
		t.Errorf("dead letters = %+v, want the poison event with a 422 reason", rep.Dead)
	}
	if rep.Stats.Applied != len(rep.Applied) || !strings.Contains(out.String(), fmt.Sprintf("applied %d effects of this run", len(rep.Applied))) {
		t.Errorf("report counts %d applied effects, want this run's %d", rep.Stats.Applied, len(rep.Applied))
	}
	// Listing the DLQ left its messages visible, for scripts/replay and
	// inspect.
	attrs, err := sqs.NewFromConfig(s.AWS).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(s.Queues["demo"].DLQURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	if v, h := attrs.Attributes["ApproximateNumberOfMessages"], attrs.Attributes["ApproximateNumberOfMessagesNotVisible"]; v != "1" || h != "0" {
		t.Errorf("DLQ after the demo: %s visible, %s hidden; want the dead letter visible", v, h)
	}
	if seen["hmac/"+flakyID(rep)] != 1 {
		t.Errorf("flaky event applied %d times, want 1", seen["hmac/"+flakyID(rep)])
	}

	// The backlog: 30 events sent at once to a tenant whose billing
	// destination takes 5/s (burst 2) drain at that rate, in order, each
	// where its filter selects it. Unpaced, billing would take its 25 in
	// well under a second (and RunBacklog fails with ErrTooFast).
	out.Reset()
	relay := f.Tenants[BacklogTenant]
	b, err := RunBacklog(ctx, BacklogOptions{BaseURL: s.URL(), TargetURL: s.TargetURL(), Tenant: BacklogTenant,
		Stripe: relay.Providers["stripe"], Outbound: relay.Outbound, Rated: BacklogDestination, Out: &out, Wait: 90 * time.Second})
	b.Print(&out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if b.ByDest["billing"] != 25 || b.ByDest["audit"] != 30 || len(b.ByDest) != 2 {
		t.Errorf("forwards per destination %v, want billing 25 (its filter: invoice.*) and audit 30", b.ByDest)
	}
	if min := time.Duration((float64(25-b.Limit.Burst) - b.Limit.PerSecond) / b.Limit.PerSecond * float64(time.Second)); b.Drain < min {
		t.Errorf("billing drained in %s, faster than its rate allows (at least %s)", b.Drain, min)
	}
	if b.Max() > b.Bound() || b.Max() == 0 {
		t.Errorf("billing took at most %d in a second, want 1 to %d", b.Max(), b.Bound())
	}

	// The pause: relay's billing paused, 9 invoice events of 3 customers
	// reach audit at once and billing not at all (they wait, outcome
	// paused); on resume billing drains them in order, 0 dead letters.
	out.Reset()
	states := destination.NewDynamoDB(dynamodb.NewFromConfig(s.AWS), s.Worker.LedgerTable)
	po := PauseOptions{BaseURL: s.URL(), TargetURL: s.TargetURL(), Tenant: BacklogTenant, Stripe: relay.Providers["stripe"],
		Outbound: relay.Outbound, Paused: PausedDestination, States: states, SQS: sqs.NewFromConfig(s.AWS),
		DLQURL: s.Queues[BacklogTenant].DLQURL, LogFile: logFile, Out: &out, Wait: 60 * time.Second}
	p, err := RunPause(ctx, po)
	p.Print(&out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if p.ByDest["billing"] != 9 || p.ByDest["audit"] != 9 || p.Waits < 3 {
		t.Errorf("forwards per destination %v, %d waits; want 9 each and billing's 3 streams waiting", p.ByDest, p.Waits)
	}
	for _, e := range p.Events {
		if e.At["audit"] >= p.Resumed || e.At["billing"] <= p.Resumed {
			t.Errorf("%s: audit at %s, billing at %s, resumed at %s; want audit before the resume, billing after", e.ID, e.At["audit"], e.At["billing"], p.Resumed)
		}
	}
	if drain := p.Events[len(p.Events)-1].At["billing"] - p.Resumed; drain > devstack.LocalResumeDrain+5*time.Second {
		t.Errorf("billing drained %s after its resume, want within make run's %s poll and cache (and its rate)", drain, devstack.LocalResumeDrain)
	}
	// Never resumed, the backlog never drains: the scenario fails (and
	// resumes billing on its way out).
	po.SkipResume, po.Wait, po.Customers, po.Events = true, devstack.LocalResumeDrain+2*time.Second, 1, 1
	out.Reset()
	if _, err := RunPause(ctx, po); !errors.Is(err, ErrPausedScenario) {
		t.Errorf("pause scenario without a resume: %v, want ErrPausedScenario\n%s", err, out.String())
	}
	if st, err := states.States(ctx, BacklogTenant); err != nil || st[PausedDestination].IsPaused() {
		t.Errorf("billing after the failed scenario: %+v, %v; want resumed", st[PausedDestination], err)
	}
}

func flakyID(rep Report) string {
	for _, a := range rep.Applied {
		if strings.HasPrefix(a.EventID, "evt_flaky_") {
			return a.EventID
		}
	}
	return "evt_flaky_(missing)"
}
