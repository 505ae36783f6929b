package devstack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/emulator"
)

// TestMakeRunIngestPath drives what `make run` serves with the repository's
// default tenants file: a signed delivery is accepted, its repeat answered
// as a duplicate, and exactly one message waits on the tenant's queue.
func TestMakeRunIngestPath(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tenantsFile, targetAddr := tenantsWithTarget(t)
	s, err := Start(ctx, Options{
		Name:        "t" + uniqueSuffix(t),
		TenantsFile: tenantsFile,
		Addr:        "127.0.0.1:0",
		TargetAddr:  targetAddr,
		Endpoint:    awstest.Moto(t), DynamoDBEndpoint: awstest.DynamoDBLocal(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
	mac := hmac.New(sha256.New, []byte("demo-github-secret"))
	mac.Write([]byte(body))
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", delivery)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
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

// tenantsWithTarget copies the repository's tenants file with the target
// service moved to a free port, so tests never collide with `make run`.
func tenantsWithTarget(t *testing.T) (file, addr string) {
	t.Helper()
	port, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	file, err = RetargetTenantsFile(filepath.Join(awstest.ModuleRoot(), "events", "tenants.json"), t.TempDir(), addr)
	if err != nil {
		t.Fatal(err)
	}
	return file, addr
}

// uniqueSuffix keeps stack names (tables, queues, parameters) distinct
// across tests and repeated runs on one emulator.
func uniqueSuffix(t *testing.T) string {
	n := awstest.Name(t)
	return n[len(n)-9:]
}
