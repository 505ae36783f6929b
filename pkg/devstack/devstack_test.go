package devstack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/awstest"
)

// TestMakeRunIngestPath drives what `make run` serves with the repository's
// default tenants file: a signed delivery is accepted, its repeat answered
// as a duplicate, and exactly one message waits on the tenant's queue.
func TestMakeRunIngestPath(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Start(ctx, Options{
		Name:        "t" + strings.ToLower(awstest.Name(t))[:8],
		TenantsFile: awstest.ModuleRoot() + "/events/tenants.json",
		Addr:        "127.0.0.1:0",
		Endpoint:    awstest.Moto(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	go func() { _ = s.Serve(ctx) }()

	body := `{"action":"opened","issue":{"number":7},"repository":{"full_name":"octo/hello"}}`
	mac := hmac.New(sha256.New, []byte("demo-github-secret"))
	mac.Write([]byte(body))
	post := func() (int, string) {
		req, _ := http.NewRequest("POST", s.URL()+"/webhooks/demo/github", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", "devstack-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, want := range []string{`"status":"accepted"`, `"status":"duplicate"`} {
		if code, b := post(); code != 200 || !strings.Contains(b, want) {
			t.Fatalf("POST = %d %s, want 200 %s", code, b, want)
		}
	}
	out, err := sqs.NewFromConfig(s.AWS).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(s.Queues["demo"].URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || out.Messages[0].Attributes["MessageGroupId"] != "octo/hello#7" {
		t.Fatalf("queue holds %d messages (%v), want 1 in group octo/hello#7", len(out.Messages), out.Messages)
	}
	if !strings.Contains(s.Banner(), s.URL()+"/webhooks/demo/github") {
		t.Errorf("banner lacks the demo GitHub URL:\n%s", s.Banner())
	}
}

func TestStartReportsPortInUse(t *testing.T) {
	ctx := context.Background()
	first, err := Start(ctx, Options{Name: "pt" + strings.ToLower(awstest.Name(t))[:6], TenantsFile: awstest.ModuleRoot() + "/events/tenants.json", Addr: "127.0.0.1:0", Endpoint: awstest.Moto(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	addr := strings.TrimPrefix(first.URL(), "http://")
	_, err = Start(ctx, Options{TenantsFile: awstest.ModuleRoot() + "/events/tenants.json", Addr: addr, Endpoint: awstest.Moto(t)})
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Start on %s = %v, want a clear port-in-use error", addr, err)
	}
}
