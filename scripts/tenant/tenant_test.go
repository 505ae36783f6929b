// Package tenant tests scripts/tenant/tenant.sh, the onboarding command,
// with the real aws CLI against moto: moto's CloudFormation creates and
// deletes the tenant stacks from the committed template-tenant.yaml
// (queues, DLQ, redrive, event source mapping, DeletionPolicy: Retain), and
// moto's SQS and SSM hold the queues and credentials. What moto cannot run
// is covered elsewhere: it has no SAM transform, so the core stack here is
// testdata/core-exports.yaml (the exports template.yaml provides, kept in
// step by scripts/template's tests). The tenant stack has no alarms: the
// core stack's watch (pkg/watch) alerts for every tenant.
package tenant

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/ingest"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// account is moto's default account id.
const account = "123456789012"

const githubSecret = "It's a Secret to Everybody" // the GitHub sample's own secret

type env struct {
	endpoint, core, dir string
	awsBin              string
	cfg                 aws.Config
}

var (
	coreOnce sync.Once
	coreName string
	coreErr  error
)

// setup returns this binary's moto with one core stack (created on first
// use, shared by the tests: each uses its own tenants) and a folder with
// the tenants' credential files.
func setup(t *testing.T) env {
	t.Helper()
	bin, err := emulator.AWSCLI()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("aws CLI missing under CI=true: %v", err)
		}
		t.Skipf("aws CLI missing: %v", err)
	}
	e := env{endpoint: awstest.Moto(t), dir: t.TempDir(), awsBin: bin}
	e.cfg = awstest.Config(t, e.endpoint)
	for name, body := range map[string]string{
		"in.json":               `{"providers":{"github":{"secrets":["` + githubSecret + `"]}}}`,
		"out.json":              `{"targetUrl":"https://target.example/events","secrets":["whsec_dGVzdA=="]}`,
		"bad.json":              `{`,
		"empty-secret.json":     `{"providers":{"stripe":{"secrets":[""]}}}`,
		"typo.json":             `{"providers":{"stripe":{"secret":["whsec_x"]}}}`,
		"unknown-provider.json": `{"providers":{"paypal":{"secrets":["x"]}}}`,
		"square-no-url.json":    `{"providers":{"square":{"secrets":["sq-key"]}}}`,
		"paddle-header.json":    `{"providers":{"paddle":{"secrets":["pdl"],"settings":{"header":"X-Other"}}}}`,
		"bad-target.json":       `{"targetUrl":"/relative","secrets":["whsec_y"]}`,
		"bad-outbound.json":     `{"targetUrl":"ftp://target.example","secrets":["whsec_y",""],"timeout":"soon","retries":3}`,
		"bad-destinations.json": `{"destinations":[{"name":"Ops","url":"https://a.example","secrets":["whsec_y"],"rate":"fast","filter":{"events":["stripe:*"],"where":[{"path":"a","equals":1,"in":[1]}]}},` +
			`{"name":"b","url":"https://a.example","secrets":[""],"colour":"red"}]}`,
	} {
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	coreOnce.Do(func() {
		coreName = fmt.Sprintf("hp%d", time.Now().UnixNano()%1_000_000_000)
		coreErr = e.createCore(coreName)
	})
	if coreErr != nil {
		t.Fatal(coreErr)
	}
	e.core = coreName
	return e
}

// createCore creates a core stack's exports under name, with the
// parameters given as "Key=Value".
func (e env) createCore(name string, params ...string) error {
	create := []string{"cloudformation", "create-stack", "--stack-name", name, "--template-body", "file://testdata/core-exports.yaml", "--capabilities", "CAPABILITY_IAM"}
	for _, p := range params {
		k, v, _ := strings.Cut(p, "=")
		create = append(create, "--parameters", "ParameterKey="+k+",ParameterValue="+v)
	}
	for _, args := range [][]string{
		create,
		{"cloudformation", "wait", "stack-create-complete", "--stack-name", name},
	} {
		if out, err := e.command(args...).CombinedOutput(); err != nil {
			return fmt.Errorf("aws %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// ownCore gives e a core stack of its own, named prefix<n>, for a test
// whose tenant list must not meet the shared core's, with the parameters
// given as "Key=Value".
func (e *env) ownCore(t *testing.T, prefix string, params ...string) {
	t.Helper()
	e.core = fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()%1_000_000_000)
	if err := e.createCore(e.core, params...); err != nil {
		t.Fatal(err)
	}
}

func (e env) environ(extra ...string) []string {
	return emulator.CLIEnv(e.endpoint, e.awsBin, append([]string{"STACK_NAME=" + e.core}, extra...)...)
}

func (e env) command(args ...string) *exec.Cmd {
	cmd := exec.Command(e.awsBin, append([]string{"--endpoint-url", e.endpoint, "--output", "json"}, args...)...)
	cmd.Env = e.environ()
	return cmd
}

// aws runs the aws CLI against moto and returns its output.
func (e env) aws(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.command(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("aws %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// tenant runs tenant.sh; files named like "in.json" are taken from e.dir.
func (e env) tenant(t *testing.T, extra []string, args ...string) (string, error) {
	t.Helper()
	for i, a := range args {
		if strings.HasSuffix(a, ".json") {
			args[i] = filepath.Join(e.dir, a)
		}
	}
	cmd := exec.Command("./tenant.sh", args...)
	cmd.Env = e.environ(extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (e env) queueURL(name string) string { return e.endpoint + "/" + account + "/" + name }

// depth returns the queue's visible + in-flight messages, or -1 when the
// queue does not exist.
func (e env) depth(t *testing.T, name string) int {
	t.Helper()
	out, err := sqs.NewFromConfig(e.cfg).GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(e.queueURL(name)), AttributeNames: []sqsAttr{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"},
	})
	if err != nil {
		if strings.Contains(err.Error(), "NonExistentQueue") || strings.Contains(err.Error(), "QueueDoesNotExist") {
			return -1
		}
		t.Fatal(err)
	}
	var n int
	for _, v := range out.Attributes {
		var k int
		fmt.Sscan(v, &k)
		n += k
	}
	return n
}

// listedIDs returns the onboarded tenant ids the ingest function loads
// (/<core>/tenant-ids/*), comma-separated.
func (e env) listedIDs(t *testing.T) string {
	t.Helper()
	out, err := ssm.NewFromConfig(e.cfg).GetParametersByPath(context.Background(), &ssm.GetParametersByPathInput{Path: aws.String("/" + e.core + "/tenant-ids")})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range out.Parameters {
		ids = append(ids, aws.ToString(p.Value))
	}
	return strings.Join(ids, ",")
}

func (e env) send(t *testing.T, name string) {
	t.Helper()
	_, err := sqs.NewFromConfig(e.cfg).SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(e.queueURL(name)), MessageBody: aws.String("{}"),
		MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(fmt.Sprint(time.Now().UnixNano())),
	})
	if err != nil {
		t.Fatal(err)
	}
}

// mappings returns the event source ARN → function ARN of every mapping.
func (e env) mappings(t *testing.T) map[string]string {
	t.Helper()
	var out struct {
		EventSourceMappings []struct{ EventSourceArn, FunctionArn string }
	}
	if err := json.Unmarshal([]byte(e.aws(t, "lambda", "list-event-source-mappings")), &out); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, x := range out.EventSourceMappings {
		m[x.EventSourceArn] = x.FunctionArn
	}
	return m
}

func (e env) stackOutputs(t *testing.T, name string) map[string]string {
	t.Helper()
	var out struct {
		Stacks []struct {
			StackStatus string
			Outputs     []struct{ OutputKey, OutputValue string }
			Tags        []struct{ Key, Value string }
		}
	}
	if err := json.Unmarshal([]byte(e.aws(t, "cloudformation", "describe-stacks", "--stack-name", name)), &out); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{"status": out.Stacks[0].StackStatus}
	for _, o := range out.Stacks[0].Outputs {
		m[o.OutputKey] = o.OutputValue
	}
	for _, tag := range out.Stacks[0].Tags {
		m["tag:"+tag.Key] = tag.Value
	}
	return m
}

func TestAddRejects(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tests := []struct {
		name  string
		extra []string
		args  []string
		want  []string // every problem, at once
	}{
		{"bad id", nil, []string{"add", "Acme!", "in.json"}, []string{"invalid tenant id"}},
		{"reserved suffix", nil, []string{"add", "acme-dlq", "in.json"}, []string{"must not end in '-dlq'"}},
		{"missing files", nil, []string{"add", "initech", "no-in.json", "no-out.json"}, []string{"no such file: ", "no-in.json ", "no-out.json"}},
		{"bad json", nil, []string{"add", "initech", "bad.json"}, []string{"not valid JSON"}},
		{"bad outbound json", nil, []string{"add", "initech", "in.json", "bad.json"}, []string{"not valid JSON"}},
		{"empty secret", nil, []string{"add", "initech", "empty-secret.json"}, []string{`tenant "initech": providers.stripe.secrets[0]: empty secret`}},
		{"misspelt field", nil, []string{"add", "initech", "typo.json"}, []string{`providers.stripe: unknown field "secret"`, `providers.stripe.secrets: at least one secret is required`}},
		{"unknown provider", nil, []string{"add", "initech", "unknown-provider.json"}, []string{`providers.paypal: unknown provider`}},
		{"missing setting", nil, []string{"add", "initech", "square-no-url.json"}, []string{`providers.square.settings: provider misconfigured: square: missing settings base_url`}},
		{"setting a named sender owns", nil, []string{"add", "initech", "paddle-header.json"}, []string{`paddle: unknown settings header (known: tolerance)`}},
		{"bad target url", nil, []string{"add", "initech", "in.json", "bad-target.json"}, []string{`tenant "initech": outbound.targetUrl`}},
		{"every problem of both files", nil, []string{"add", "initech", "typo.json", "bad-outbound.json"}, []string{
			`providers.stripe: unknown field "secret"`, `unknown field "retries"`, "outbound.targetUrl: not an absolute http(s) URL",
			"outbound.secrets[1]: empty secret", "outbound.timeout: not a positive duration"}},
		{"every problem of a destinations file", nil, []string{"add", "initech", "in.json", "bad-destinations.json"}, []string{
			`destinations[1]: unknown field "colour"`, `tenant "initech": outbound.destinations[0].name: not a-z`, "outbound.destinations[0].rate: not",
			`outbound.destinations[0].filter.events[0]: sender "stripe" is not enabled`, "outbound.destinations[0].filter.where[0]: sets more than one",
			"outbound.destinations[1].url: the URL of destinations[0] too", "outbound.destinations[1].secrets[0]: empty secret"}},
		{"bad parameter", []string{"TENANT_MAX_CONCURRENCY=many"}, []string{"add", "initech", "in.json"}, []string{"is not a number"}},
		{"too few receives for the worker's attempts", []string{"MAX_RECEIVE_COUNT=279"}, []string{"add", "initech", "in.json"},
			[]string{"MaxReceiveCount 279 is below 280, the least for the core stack's WorkerMaxAttempts 26", "set MAX_RECEIVE_COUNT=280 or more"}},
		{"no core stack", []string{"STACK_NAME=nosuchcore"}, []string{"add", "initech", "in.json"}, []string{"core stack nosuchcore not found"}},
		{"remove unknown", nil, []string{"remove", "nobody"}, []string{"has no stack"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.tenant(t, tt.extra, tt.args...)
			if err == nil {
				t.Fatalf("tenant.sh %v succeeded: %s", tt.args, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("tenant.sh %v = %v %s, want failure containing %q", tt.args, err, out, w)
				}
			}
		})
	}
	if n := e.depth(t, e.core+"_initech.fifo"); n != -1 {
		t.Error("a rejected add created a queue")
	}
	if _, err := tenant.NewSSM(ssm.NewFromConfig(e.cfg), "/"+e.core).Inbound(context.Background(), "initech", provider.Registry()); err == nil {
		t.Error("a rejected add stored credentials")
	}
}

type sqsAttr = sqstypes.QueueAttributeName

func drain(t *testing.T, e env, name string) {
	t.Helper()
	c := sqs.NewFromConfig(e.cfg)
	for e.depth(t, name) > 0 {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queueURL(name)), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.queueURL(name)), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// ingestHandler is IngestFunction as the core stack configures it, on moto:
// its own idempotency table, the core's parameter prefix, and the core's
// queue naming with moto's host.
func ingestHandler(t *testing.T, e env) *ingest.Handler {
	t.Helper()
	table := e.core + "-idempotency"
	if err := provision.Idempotency(context.Background(), dynamodb.NewFromConfig(e.cfg), table); err != nil {
		t.Fatal(err)
	}
	return ingest.NewAWS(e.cfg, ingest.Settings{
		IdempotencyTable: table,
		ParameterPrefix:  "/" + e.core,
		QueueURLTemplate: e.endpoint + "/" + account + "/" + e.core + "_{tenant}.fifo",
	}, slog.New(slog.DiscardHandler))
}

// githubEvent is the GitHub sample delivery addressed to tenant acme, signed
// with in.json's secret.
func githubEvent(t *testing.T) events.APIGatewayV2HTTPRequest {
	t.Helper()
	all, err := providertest.LoadSamples(providertest.SamplesDir())
	if err != nil {
		t.Fatal(err)
	}
	var gh []providertest.Sample
	for _, s := range all {
		if s.Provider == "github" {
			gh = append(gh, s)
		}
	}
	evs, err := samples.Generate(gh[:1], samples.Options{
		Tenant: "acme", Providers: map[string]webhook.Config{"github": {Secrets: []string{githubSecret}}},
		Registry: provider.Registry(), Now: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs[0].Payload
}

// coreQueueURLTemplate is IngestFunction's QUEUE_URL_TEMPLATE in
// template.yaml as CloudFormation resolves it for core stack core in moto's
// account and region. (scripts/template's tests check the rendered
// template; reading the source keeps this test off the slow SAM transform.)
func coreQueueURLTemplate(t *testing.T, core string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(awstest.ModuleRoot(), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`QUEUE_URL_TEMPLATE: !Sub (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("template.yaml declares no QUEUE_URL_TEMPLATE: !Sub …")
	}
	return strings.NewReplacer("${AWS::Region}", awstest.Region, "${AWS::URLSuffix}", "amazonaws.com",
		"${AWS::AccountId}", account, "${AWS::StackName}", core).Replace(string(m[1]))
}
