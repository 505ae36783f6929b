package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/logtest"
	"github.com/hookpack/hookpack/pkg/provider/github"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// TestMakeRunIngestPath drives what `make run` serves with the repository's
// tenants file and the target service moved off DefaultTargetAddr (as
// `make run TARGET_ADDR=127.0.0.1:3901` does): a signed delivery is
// accepted, its repeat answered as a duplicate, and the event reaches the
// target service on its moved address exactly once.
func TestMakeRunIngestPath(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	targetAddr := fmt.Sprintf("127.0.0.1:%d", port)
	logs := &logtest.Buffer{}
	s, err := Start(ctx, Options{
		Name:        "t" + uniqueSuffix(t),
		TenantsFile: filepath.Join(awstest.ModuleRoot(), "events", "tenants.json"),
		Addr:        "127.0.0.1:0",
		TargetAddr:  targetAddr,
		Endpoint:    awstest.Moto(t), DynamoDBEndpoint: awstest.DynamoDBLocal(t),
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.TargetURL(), "http://"+targetAddr; got != want {
		t.Fatalf("TargetURL() = %s, want %s", got, want)
	}
	want := "http://" + targetAddr + "/tenants/demo/events"
	if !strings.Contains(logs.String(), `"msg":"target URL follows TARGET_ADDR","tenantId":"demo","url":"`+want+`","from":"http://127.0.0.1:3001/tenants/demo/events"`) {
		t.Errorf("Start logged\n%s\nwant demo's targetUrl moved to %s", logs, want)
	}
	if !strings.Contains(logs.String(), `"tenantId":"relay","destination":"billing","url":"http://`+targetAddr+`/tenants/relay/events?to=billing"`) {
		t.Errorf("Start logged\n%s\nwant relay's destination billing moved to %s", logs, targetAddr)
	}
	go func() { _ = s.Serve(ctx) }()

	body := `{"action":"opened","issue":{"number":7},"repository":{"full_name":"octo/hello"}}`
	post := func() (int, string) { return postSigned(t, s.URL()+"/webhooks/demo/github", body, "devstack-1") }
	for _, want := range []string{`"status":"accepted"`, `"status":"duplicate"`} {
		if code, b := post(); code != 200 || !strings.Contains(b, want) {
			t.Fatalf("POST = %d %s, want 200 %s", code, b, want)
		}
	}
	// The poller hands the message to the worker, whose forward effect
	// delivers it to the target service exactly once, in its conversation.
	deadline := time.Now().Add(30 * time.Second)
	for len(s.Target.Applied()) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	applied := s.Target.Applied()
	if len(applied) != 1 || applied[0].Conversation != "octo/hello#7" || applied[0].EventID != "devstack-1" {
		t.Fatalf("target applied %+v, want devstack-1 once in conversation octo/hello#7", applied)
	}
	// Bodies larger than SQS takes go through S3 and reach the target byte
	// for byte (the target verifies the forward's signature over the body).
	for i, n := range []int{900_000, 3_000_000} {
		id := fmt.Sprint("devstack-large-", i)
		big := fmt.Sprintf(`{"action":"opened","issue":{"number":%d},"repository":{"full_name":"octo/large"},"pad":"%s"}`, 100+i, strings.Repeat(`\"é`, n/4))
		if code, b := postSigned(t, s.URL()+"/webhooks/demo/github", big, id); code != 200 || !strings.Contains(b, `"accepted"`) {
			t.Fatalf("POST %d bytes = %d %s, want 200 accepted", len(big), code, b)
		}
	}
	// Over what a Lambda invocation can carry: refused, nothing queued.
	huge := `{"action":"opened","issue":{"number":1},"repository":{"full_name":"octo/huge"},"pad":"` + strings.Repeat("x", 6<<20) + `"}`
	if code, b := postSigned(t, s.URL()+"/webhooks/demo/github", huge, "devstack-huge"); code != 413 || !strings.Contains(b, "too large") {
		t.Errorf("POST %d bytes = %d %s, want 413 too large", len(huge), code, b)
	}
	for len(s.Target.Applied()) < 3 && time.Now().Before(deadline.Add(30*time.Second)) {
		time.Sleep(100 * time.Millisecond)
	}
	if applied := s.Target.Applied(); len(applied) != 3 || applied[1].EventID != "devstack-large-0" || applied[2].EventID != "devstack-large-1" {
		t.Fatalf("target applied %+v, want the two large events after devstack-1", applied)
	}
	if !strings.Contains(s.Banner(), s.URL()+"/webhooks/demo/github") {
		t.Errorf("banner lacks the demo GitHub URL:\n%s", s.Banner())
	}
}

// postSigned posts body as a GitHub "issues" delivery signed with the demo
// tenant's secret.
func postSigned(t *testing.T, url, body, delivery string) (int, string) {
	t.Helper()
	req := providertest.Request(map[string]string{"Content-Type": "application/json", "X-GitHub-Event": "issues", "X-GitHub-Delivery": delivery}, body)
	return providertest.Post(t, url, github.Provider{}, req, webhook.Config{Secrets: []string{"demo-github-secret"}})
}

func TestStartReportsPortInUse(t *testing.T) {
	ctx := context.Background()
	first, err := Start(ctx, Options{Name: "pt" + uniqueSuffix(t), TenantsFile: awstest.ModuleRoot() + "/events/tenants.json", Addr: "127.0.0.1:0", TargetAddr: "127.0.0.1:0", Endpoint: awstest.Moto(t), DynamoDBEndpoint: awstest.DynamoDBLocal(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	addr := strings.TrimPrefix(first.URL(), "http://")
	_, err = Start(ctx, Options{TenantsFile: awstest.ModuleRoot() + "/events/tenants.json", Addr: addr, TargetAddr: "127.0.0.1:0", Endpoint: awstest.Moto(t), DynamoDBEndpoint: awstest.DynamoDBLocal(t)})
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Start on %s = %v, want a clear port-in-use error", addr, err)
	}
}

// TestStartRefusesABadTenantsFile: make run checks its tenants file as
// tenant.sh check does and refuses to start, naming every problem, before
// it listens or starts an emulator: a misspelt "event" would otherwise
// turn a Stripe-only destination into one of every event.
func TestStartRefusesABadTenantsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tenants.json")
	body := `{"tenants":{"acme":{"providers":{"stripe":{"secrets":["whsec_x"]},"github":{"secrets":["s"]}},
		"outbound":{"destinations":[{"name":"billing","url":"http://127.0.0.1:3001/billing","secrets":["whsec_y"],"filter":{"event":["stripe:invoice.*"]}},
		{"name":"ci","url":"http://127.0.0.1:3001/ci","secrets":["whsec_y"],"rate":"fast"}]}}}}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s, err := Start(context.Background(), Options{TenantsFile: file, Addr: addr, TargetAddr: "127.0.0.1:0", MotoPort: port})
	if err == nil {
		s.Close()
		t.Fatal("Start with a misspelt filter field succeeded")
	}
	for _, want := range []string{`tenants file ` + file + `: tenants.acme.outbound.destinations[0].filter: unknown field "event"`,
		`tenant "acme": outbound.destinations[1].rate: not`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start() = %v\nwant %q in it", err, want)
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("%s is taken after the refused start: %v", addr, err)
	}
	l.Close()
}

func TestRetarget(t *testing.T) {
	tests := []struct {
		name, targetURL, addr, want string
		moved                       bool
	}{
		{"default address", "http://127.0.0.1:3001/tenants/demo/events", "127.0.0.1:3901", "http://127.0.0.1:3901/tenants/demo/events", true},
		{"localhost on the default port", "http://localhost:3001/events?x=1", "127.0.0.1:3901", "http://127.0.0.1:3901/events?x=1", true},
		{"IPv6 loopback on the default port", "http://[::1]:3001/events", "[::1]:3901", "http://[::1]:3901/events", true},
		{"already there", "http://127.0.0.1:3001/events", "127.0.0.1:3001", "http://127.0.0.1:3001/events", false},
		{"another local port", "http://127.0.0.1:4001/events", "127.0.0.1:3901", "http://127.0.0.1:4001/events", false},
		{"Docker Desktop's host", "http://host.docker.internal:3001/events", "127.0.0.1:3901", "http://host.docker.internal:3001/events", false},
		{"a tenant's own service", "https://hooks.example.com/in", "127.0.0.1:3901", "https://hooks.example.com/in", false},
		{"no targetUrl", "", "127.0.0.1:3901", "", false},
	}
	dests := func(u string) []tenant.Destination {
		return []tenant.Destination{{Name: "billing", URL: u}, {Name: "crm", URL: "https://crm.example.com/in"}}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &tenant.File{Tenants: map[string]tenant.FileTenant{
				"demo":  {Outbound: tenant.Outbound{TargetURL: tt.targetURL}},
				"relay": {Outbound: tenant.Outbound{Destinations: dests(tt.targetURL)}},
			}}
			moved := retarget(f, tt.addr)
			if got := f.Tenants["demo"].Outbound.TargetURL; got != tt.want || (len(moved) == 2) != tt.moved {
				t.Errorf("retarget(%q, %s) = %q, moved %v; want %q, moved %v", tt.targetURL, tt.addr, got, moved, tt.want, tt.moved)
			}
			got := f.Tenants["relay"].Outbound.Destinations
			if got[0].URL != tt.want || got[1].URL != "https://crm.example.com/in" {
				t.Errorf("retarget(%q, %s) left the destinations at %s, %s; want %s and the crm's own", tt.targetURL, tt.addr, got[0].URL, got[1].URL, tt.want)
			}
		})
	}
}

func TestDialAddr(t *testing.T) {
	tests := []struct {
		listen, want string
	}{
		{"127.0.0.1:3901", "127.0.0.1:3901"},
		{"0.0.0.0:3901", "127.0.0.1:3901"},
		{"[::]:3901", "127.0.0.1:3901"},
	}
	for _, tt := range tests {
		a, err := net.ResolveTCPAddr("tcp", tt.listen)
		if err != nil {
			t.Fatal(err)
		}
		if got := DialAddr(a); got != tt.want {
			t.Errorf("DialAddr(%s) = %s, want %s", tt.listen, got, tt.want)
		}
	}
}

// uniqueSuffix keeps stack names (tables, queues, parameters) distinct
// across tests and repeated runs on one emulator.
func uniqueSuffix(t *testing.T) string {
	n := awstest.Name(t)
	return n[len(n)-9:]
}
