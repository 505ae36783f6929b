package demo

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// TestEndToEnd runs what `make run` runs (HTTP API → ingest → FIFO queue →
// poller → worker → ledger → target) in-process on moto, sends the demo's
// deliveries, and asserts the guarantees the demo prints.
func TestEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	port, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	targetAddr := fmt.Sprintf("127.0.0.1:%d", port)
	tenantsFile, err := devstack.RetargetTenantsFile(filepath.Join(awstest.ModuleRoot(), "events", "tenants.json"), t.TempDir(), targetAddr)
	if err != nil {
		t.Fatal(err)
	}
	name := "e2e" + strings.ToLower(awstest.Name(t))[len(awstest.Name(t))-6:]
	s, err := devstack.Start(ctx, devstack.Options{Name: name, TenantsFile: tenantsFile, Addr: "127.0.0.1:0", TargetAddr: targetAddr, Endpoint: awstest.Moto(t), DynamoDBEndpoint: awstest.DynamoDBLocal(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sctx, stop := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() { defer close(served); _ = s.Serve(sctx) }()
	defer func() { stop(); <-served }()

	f, err := tenant.LoadFile(tenantsFile, provider.Registry())
	if err != nil {
		t.Fatal(err)
	}
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
	byOutcome := map[string]int{}
	burstAccepted := 0
	for _, a := range rep.Answers {
		byOutcome[a.Outcome]++
		if a.Status >= 500 {
			t.Errorf("%s answered %d", a.Scenario, a.Status)
		}
		if a.Key == "burst" && a.Outcome == "accepted" {
			burstAccepted++
		}
	}
	if burstAccepted != 1 {
		t.Errorf("burst of 20: %d accepted, want exactly 1", burstAccepted)
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
	if seen["hmac/"+flakyID(rep)] != 1 {
		t.Errorf("flaky event applied %d times, want 1", seen["hmac/"+flakyID(rep)])
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
