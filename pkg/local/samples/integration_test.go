package samples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/esm"
	"github.com/hookpack/hookpack/pkg/local/runtimeapi"
	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
)

// TestEventsAcceptedByIngest is `make invoke` for every committed event
// and, after `make events`, every other one, on moto: the real
// IngestFunction bootstrap, provisioned by devstack from the repository's
// tenants file, accepts each event file (or answers its handshake) and
// reports each repeat as a duplicate.
func TestEventsAcceptedByIngest(t *testing.T) {
	endpoint := awstest.Moto(t)
	root := awstest.ModuleRoot()
	bin := awstest.Bootstrap(t, "ingest")

	ctx := context.Background()
	stack, err := devstack.Start(ctx, devstack.Options{
		Name:        fmt.Sprintf("hookpack-ev%d", time.Now().UnixNano()%1_000_000_000),
		TenantsFile: filepath.Join(root, "events", "tenants.json"),
		Addr:        "127.0.0.1:0",
		TargetAddr:  "127.0.0.1:0",
		Endpoint:    endpoint, DynamoDBEndpoint: awstest.DynamoDBLocal(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Close)
	env := emulatorEnv(t, endpoint,
		"IDEMPOTENCY_TABLE="+stack.Settings.IdempotencyTable,
		"TENANT_PARAMETER_PREFIX="+stack.Settings.ParameterPrefix,
		"QUEUE_URL_TEMPLATE="+stack.Settings.QueueURLTemplate)

	dir := t.TempDir()
	evs := generate(t, time.Now())
	if _, err := samples.Write(dir, evs); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		t.Run(ev.File, func(t *testing.T) {
			// The committed file when there is one (it must stay accepted),
			// else the one `make events` writes now.
			payload, err := os.ReadFile(filepath.Join(root, "events", "ingest", ev.File))
			if errors.Is(err, fs.ErrNotExist) {
				payload, err = os.ReadFile(filepath.Join(dir, ev.File))
			}
			if err != nil {
				t.Fatal(err)
			}
			resp := invoke(t, bin, env, payload)
			if ev.Reply != nil {
				if resp.StatusCode != http.StatusOK || resp.Body != ev.Reply.Body || resp.Headers["content-type"] != ev.Reply.ContentType {
					t.Fatalf("handshake = %d %q (%s), want 200 %q (%s)", resp.StatusCode, resp.Body, resp.Headers["content-type"], ev.Reply.Body, ev.Reply.ContentType)
				}
				if ev.Reply.Body == "" && ev.Sample.Method == http.MethodGet {
					t.Errorf("GET handshake echoes no challenge")
				}
				return
			}
			for _, want := range []string{"accepted", "duplicate"} {
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("invoke = %d %s, want 200 %s", resp.StatusCode, resp.Body, want)
				}
				if got := resp.Headers["x-hookpack-status"]; got != "" {
					// The sender's own synchronous answer (Discord's deferred
					// response); the outcome is in the header.
					if got != want {
						t.Fatalf("invoke = %s (x-hookpack-status %s), want %s", resp.Body, got, want)
					}
					if want == "accepted" {
						resp = invoke(t, bin, env, payload)
					}
					continue
				}
				var out struct {
					Status string `json:"status"`
					Events []struct {
						ID     string `json:"eventId"`
						Status string `json:"status"`
					} `json:"events"`
				}
				if err := json.Unmarshal([]byte(resp.Body), &out); err != nil {
					t.Fatalf("response body %q: %v", resp.Body, err)
				}
				if out.Status != want || len(out.Events) == 0 {
					t.Fatalf("invoke = %s, want status %s", resp.Body, want)
				}
				for _, e := range out.Events {
					if e.Status != want {
						t.Errorf("event %s = %s, want %s", e.ID, e.Status, want)
					}
				}
				if want == "accepted" {
					resp = invoke(t, bin, env, payload)
				}
			}
		})
	}
}

// invoke runs the bootstrap once under runtimeapi and decodes its response;
// the function's logs are shown when the test fails.
func invoke(t *testing.T, bin string, env []string, payload []byte) events.APIGatewayV2HTTPResponse {
	t.Helper()
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := runtimeapi.Invoke(ctx, runtimeapi.Options{Binary: bin, Env: env, Event: payload, Timeout: 10 * time.Second, Stdout: &logs, Stderr: &logs})
	if err != nil || res.Error != nil {
		t.Fatalf("Invoke() = %v, function error %v\n%s", err, res.Error, logs.String())
	}
	// A duplicate is a failed conditional put on DynamoDB Local, whose
	// error responses carry no checksum header: the SDK must not warn
	// (lambdaenv.AcceptMissingCRC32).
	if strings.Contains(logs.String(), "failed to close HTTP response body") {
		t.Errorf("the function logged an SDK warning:\n%s", logs.String())
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(res.Payload, &resp); err != nil {
		t.Fatalf("response %s: %v", res.Payload, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("function logs:\n%s", logs.String())
		}
	})
	return resp
}

// TestWorkerEventAcceptedByWorker runs events/worker/sqs-batch.json (fresh)
// through the real worker binary: every record is applied (forwarded to the
// target service) and the same events delivered again repeat no effect.
func TestWorkerEventAcceptedByWorker(t *testing.T) {
	endpoint := awstest.Moto(t)
	root := awstest.ModuleRoot()
	bin := awstest.Bootstrap(t, "worker")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stack, err := devstack.Start(ctx, devstack.Options{
		Name:        fmt.Sprintf("hookpack-wk%d", time.Now().UnixNano()%1_000_000_000),
		TenantsFile: filepath.Join(root, "events", "tenants.json"), Addr: "127.0.0.1:0", TargetAddr: "127.0.0.1:0", Endpoint: endpoint, DynamoDBEndpoint: awstest.DynamoDBLocal(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Close)
	go func() { _ = stack.Serve(ctx) }() // the target service

	f := stack.Tenants
	all, err := providertest.LoadSamples(providertest.SamplesDir())
	if err != nil {
		t.Fatal(err)
	}
	// The batch, delivered twice: the second time as SQS delivers the same
	// events enqueued again (later SequenceNumbers), which the ledger skips.
	batchAt := func(now time.Time, sequence int64) (events.SQSEvent, []byte) {
		t.Helper()
		batch, err := samples.WorkerBatch(all, samples.WorkerOptions{
			Tenant: "demo", Providers: f.Tenants["demo"].Providers, Registry: provider.Registry(), Now: now, Sequence: sequence,
			QueueARN: esm.ARNOf(stack.Queues["demo"].URL, awstest.Region),
		})
		if err != nil {
			t.Fatal(err)
		}
		payload, err := json.Marshal(batch)
		if err != nil {
			t.Fatal(err)
		}
		return batch, payload
	}
	env := emulatorEnv(t, endpoint,
		"LEDGER_TABLE="+stack.Worker.LedgerTable,
		"TENANT_PARAMETER_PREFIX="+stack.Worker.ParameterPrefix,
		"QUEUE_URL_TEMPLATE="+stack.Worker.QueueURLTemplate)
	for round := 1; round <= 2; round++ {
		batch, payload := batchAt(time.Now(), int64(round-1))
		var logs bytes.Buffer
		res, err := runtimeapi.Invoke(ctx, runtimeapi.Options{Binary: bin, Env: env, Event: payload, Timeout: 30 * time.Second, Stdout: &logs, Stderr: &logs})
		if err != nil || res.Error != nil {
			t.Fatalf("round %d: Invoke() = %v, %v\n%s", round, err, res.Error, logs.String())
		}
		var resp events.SQSEventResponse
		if err := json.Unmarshal(res.Payload, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("round %d: response %s (%v), want no batch item failures\n%s", round, res.Payload, err, logs.String())
		}
		if got := len(stack.Target.Applied()); got != len(batch.Records) {
			t.Fatalf("round %d: target applied %d effects, want %d (one per record, never repeated)", round, got, len(batch.Records))
		}
	}
}

// emulatorEnv is a function's environment on the emulators: vars, then the
// endpoints and fake credentials.
func emulatorEnv(t *testing.T, endpoint string, vars ...string) []string {
	return append(vars, "AWS_ENDPOINT_URL="+endpoint, "AWS_ENDPOINT_URL_DYNAMODB="+awstest.DynamoDBLocal(t),
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION="+awstest.Region)
}
