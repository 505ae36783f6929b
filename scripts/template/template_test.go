// Package template holds the checks on template.yaml (the core stack) and
// template-tenant.yaml (one stack per tenant) that cfn-lint cannot make:
// the properties this pack's guarantees rest on, the naming contract
// between the two, and what N tenants add up to. Templates are rendered by
// render.py through cfn-lint's own pipeline (SAM transformed), so the
// assertions see what CloudFormation will deploy.
package template

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	rendering "github.com/hookpack/hookpack/pkg/local/render"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/watch"
	"github.com/hookpack/hookpack/pkg/worker"
)

type resource struct {
	Type                string         `json:"Type"`
	DeletionPolicy      string         `json:"DeletionPolicy"`
	UpdateReplacePolicy string         `json:"UpdateReplacePolicy"`
	Properties          map[string]any `json:"Properties"`
}

type tpl struct {
	Transform any `json:"Transform"`
	// Parameters maps a name to its properties (Default, MinValue, …).
	Parameters map[string]map[string]any `json:"Parameters"`
	Resources  map[string]resource       `json:"Resources"`
	Outputs    map[string]struct {
		Value  any `json:"Value"`
		Export struct {
			Name any `json:"Name"`
		} `json:"Export"`
	} `json:"Outputs"`
}

func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// render returns the template name as the SAM transform renders it
// (package render), a fresh value each call (tests may change theirs).
func render(t *testing.T, name string) tpl {
	t.Helper()
	out, err := rendering.JSON(context.Background(), root(), name)
	if err != nil {
		t.Fatal(err)
	}
	var v tpl
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func ofType(rs map[string]resource, typ string) map[string]resource {
	out := map[string]resource{}
	for id, r := range rs {
		if r.Type == typ {
			out[id] = r
		}
	}
	return out
}

// TestLint runs cfn-lint on both templates (the SAM transform included).
// One cfn-lint for both: it names the file of each finding, and its start
// (loading its rules and the SAM translator) is most of its CPU.
func TestLint(t *testing.T) {
	cmd := exec.Command("cfn-lint", filepath.Join(root(), "template.yaml"), filepath.Join(root(), "template-tenant.yaml"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("cfn-lint template.yaml template-tenant.yaml: %v\n%s", err, out)
	}
}

func TestCoreGuarantees(t *testing.T) {
	c := render(t, "template.yaml")
	rs := c.Resources

	t.Run("no tenant lives in the core stack", func(t *testing.T) {
		for _, typ := range []string{"AWS::SQS::Queue", "AWS::Lambda::EventSourceMapping"} {
			if n := len(ofType(rs, typ)); n != 0 {
				t.Errorf("core stack has %d %s; tenants belong in template-tenant.yaml", n, typ)
			}
		}
		for p := range c.Parameters {
			if strings.Contains(strings.ToLower(p), "tenant") {
				t.Errorf("core parameter %s: the tenant list must not be a core parameter (a plain sam deploy would reset it)", p)
			}
		}
		raw, err := os.ReadFile(filepath.Join(root(), "template.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "Fn::ForEach") || strings.Contains(string(raw), "LanguageExtensions") {
			t.Error("template.yaml uses Fn::ForEach / AWS::LanguageExtensions (needs sam build --language-extensions)")
		}
	})

	t.Run("tables: TTL, PITR, on-demand, retained", func(t *testing.T) {
		ttl, _ := rs["IdempotencyTable"].Properties["TimeToLiveSpecification"].(map[string]any)
		if ttl["AttributeName"] != "expiration" || ttl["Enabled"] != true {
			t.Errorf("TTL = %v", ttl)
		}
		tables := ofType(rs, "AWS::DynamoDB::Table")
		if len(tables) != 2 {
			t.Fatalf("%d tables, want idempotency and ledger", len(tables))
		}
		for id, r := range tables {
			pitr, _ := r.Properties["PointInTimeRecoverySpecification"].(map[string]any)
			if pitr["PointInTimeRecoveryEnabled"] != true || r.Properties["BillingMode"] != "PAY_PER_REQUEST" {
				t.Errorf("%s: PITR %v, billing %v", id, pitr, r.Properties["BillingMode"])
			}
			if r.DeletionPolicy != "Retain" || r.UpdateReplacePolicy != "Retain" {
				t.Errorf("%s: DeletionPolicy %q UpdateReplacePolicy %q, want Retain (the dedup window and effect ledger survive the stack)", id, r.DeletionPolicy, r.UpdateReplacePolicy)
			}
		}
	})

	t.Run("functions: arm64 provided.al2023, JSON logs into their own log groups", func(t *testing.T) {
		fns := ofType(rs, "AWS::Lambda::Function")
		if len(fns) != 3 {
			t.Fatalf("%d functions, want ingest, worker and watch", len(fns))
		}
		for id, f := range fns {
			if f.Properties["Runtime"] != "provided.al2023" || fmt.Sprint(f.Properties["Architectures"]) != "[arm64]" {
				t.Errorf("%s: runtime %v on %v", id, f.Properties["Runtime"], f.Properties["Architectures"])
			}
			lc, _ := f.Properties["LoggingConfig"].(map[string]any)
			group := ref(lc["LogGroup"])
			if lc["LogFormat"] != "JSON" || rs[group].Type != "AWS::Logs::LogGroup" || rs[group].Properties["RetentionInDays"] == nil {
				t.Errorf("%s: LoggingConfig = %v, want JSON into a log group with retention", id, lc)
			}
		}
	})

	t.Run("endpoint variables declared empty (sam local invoke overrides them)", func(t *testing.T) {
		for _, id := range []string{"IngestFunction", "WorkerFunction"} {
			vars := envVars(rs[id])
			for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"} {
				if v, ok := vars[k]; !ok || v != "" {
					t.Errorf("%s %s = %v (declared %v), want declared and empty", id, k, v, ok)
				}
			}
		}
	})

	t.Run("strict effect completion is a parameter, off by default", func(t *testing.T) {
		p := c.Parameters["WorkerCompleteEffects"]
		if ref(envVars(rs["WorkerFunction"])["COMPLETE_EFFECTS"]) != "WorkerCompleteEffects" || fmt.Sprint(p["Default"]) != "false" || fmt.Sprint(p["AllowedValues"]) != "[false true]" {
			t.Errorf("COMPLETE_EFFECTS = %v, parameter %v; want WorkerCompleteEffects, default false, true or false", envVars(rs["WorkerFunction"])["COMPLETE_EFFECTS"], p)
		}
	})

	t.Run("IAM statements name their resources", func(t *testing.T) {
		// Actions IAM authorizes on "*" only (no resource-level permissions).
		noResource := map[string]bool{"cloudwatch:GetMetricData": true}
		for id, role := range ofType(rs, "AWS::IAM::Role") {
			for _, st := range statements(role) {
				if !slices.ContainsFunc(list(st["Action"]), func(a any) bool { return !noResource[fmt.Sprint(a)] }) {
					continue
				}
				for _, r := range list(st["Resource"]) {
					if s := fmt.Sprint(r); s == "*" || strings.HasSuffix(s, ":*") {
						t.Errorf("%s: statement %v has wildcard resource %q", id, st["Sid"], s)
					}
				}
			}
		}
	})

	t.Run("SQS permissions cover exactly this stack's tenant queues", func(t *testing.T) {
		const queues = "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${AWS::StackName}_*"
		const dlqs = queues + "-dlq.fifo"
		tests := []struct {
			role, effect, action, resource string
		}{
			{"IngestFunctionRole", "Allow", "sqs:SendMessage", queues},
			{"IngestFunctionRole", "Deny", "sqs:SendMessage", dlqs},
			{"WorkerFunctionRole", "Allow", "sqs:ReceiveMessage", queues},
			{"WorkerFunctionRole", "Allow", "sqs:DeleteMessage", queues},
			{"WorkerFunctionRole", "Allow", "sqs:ChangeMessageVisibility", queues},
			{"WorkerFunctionRole", "Allow", "sqs:SendMessage", dlqs},
		}
		got := map[string]bool{}
		for _, role := range []string{"IngestFunctionRole", "WorkerFunctionRole"} {
			for _, st := range statements(rs[role]) {
				for _, a := range list(st["Action"]) {
					if !strings.HasPrefix(fmt.Sprint(a), "sqs:") {
						continue
					}
					for _, r := range list(st["Resource"]) {
						res := sub(r)
						if res != queues && res != dlqs {
							t.Errorf("%s %s on %q: not this stack's queue prefix", role, a, res)
						}
						got[fmt.Sprint(role, st["Effect"], a, res)] = true
					}
				}
			}
		}
		for _, tt := range tests {
			if !got[tt.role+tt.effect+tt.action+tt.resource] {
				t.Errorf("%s lacks %s %s on %s", tt.role, tt.effect, tt.action, tt.resource)
			}
		}
		if got["WorkerFunctionRole"+"Allow"+"sqs:SendMessage"+queues] {
			t.Error("worker may send to tenant queues, not only to their DLQs")
		}
	})

	t.Run("payload bucket: encrypted, private, TLS only, retained, outlives a message; ingest writes, worker reads", func(t *testing.T) {
		b := rs["PayloadBucket"]
		if b.Type != "AWS::S3::Bucket" || b.DeletionPolicy != "Retain" || b.UpdateReplacePolicy != "Retain" {
			t.Fatalf("PayloadBucket = %s, DeletionPolicy %q UpdateReplacePolicy %q; want a retained bucket", b.Type, b.DeletionPolicy, b.UpdateReplacePolicy)
		}
		enc := fmt.Sprint(b.Properties["BucketEncryption"])
		pab := fmt.Sprint(b.Properties["PublicAccessBlockConfiguration"])
		if !strings.Contains(enc, "SSEAlgorithm:AES256") || strings.Count(pab, "true") != 4 {
			t.Errorf("encryption %s, public access block %s", enc, pab)
		}
		if !strings.Contains(fmt.Sprint(rs["PayloadBucketPolicy"].Properties["PolicyDocument"]), "aws:SecureTransport:false") {
			t.Error("the bucket policy does not refuse plain HTTP")
		}
		rule := list(b.Properties["LifecycleConfiguration"].(map[string]any)["Rules"])[0].(map[string]any)
		// A message lives at most 14 days in its queue and 14 more in the DLQ.
		if ref(rule["ExpirationInDays"]) != "PayloadRetentionDays" || num(t, c.Parameters["PayloadRetentionDays"]["MinValue"]) < 28 {
			t.Errorf("expiration %v (min %v), want PayloadRetentionDays of at least 28 days", rule["ExpirationInDays"], c.Parameters["PayloadRetentionDays"]["MinValue"])
		}
		want := map[string]string{"IngestFunctionRole": "s3:PutObject", "WorkerFunctionRole": "s3:GetObject"}
		for role, action := range want {
			var got []string
			for _, st := range statements(rs[role]) {
				for _, a := range list(st["Action"]) {
					if strings.HasPrefix(fmt.Sprint(a), "s3:") {
						got = append(got, fmt.Sprint(a, " on ", sub(st["Resource"])))
					}
				}
			}
			if fmt.Sprint(got) != "["+action+" on ${PayloadBucket.Arn}/*]" {
				t.Errorf("%s S3 permissions = %v, want only %s on the payload bucket's objects", role, got, action)
			}
			if ref(envVars(rs[strings.TrimSuffix(role, "Role")])["PAYLOAD_BUCKET"]) != "PayloadBucket" {
				t.Errorf("%s: PAYLOAD_BUCKET is not the payload bucket", role)
			}
		}
	})

	t.Run("credentials: ingest reads inbound and routes only, worker outbound only", func(t *testing.T) {
		for role, want := range map[string]string{"IngestFunctionRole": "inbound", "WorkerFunctionRole": "outbound"} {
			found := false
			for _, st := range statements(rs[role]) {
				for _, a := range list(st["Action"]) {
					if s := fmt.Sprint(a); strings.HasPrefix(s, "ssm:") || strings.HasPrefix(s, "secretsmanager:") {
						res := sub(st["Resource"])
						if s == "ssm:GetParametersByPath" && role == "IngestFunctionRole" {
							// The list of onboarded tenant ids, a path that holds no credentials.
							if !strings.HasSuffix(res, "parameter/${AWS::StackName}/tenant-ids") {
								t.Errorf("ingest lists parameters at %s, want only the tenant-ids path", res)
							}
							continue
						}
						if s == "ssm:GetParameter" && role == "IngestFunctionRole" && strings.HasSuffix(res, "parameter/${AWS::StackName}/tenants/*/routes") {
							// The destinations' names and filters: no secret.
							continue
						}
						found = true
						if s != "ssm:GetParameter" || !strings.HasSuffix(res, "parameter/${AWS::StackName}/tenants/*/"+want) {
							t.Errorf("%s reads credentials with %s at %s, want only GetParameter on …/tenants/*/%s", role, s, res, want)
						}
					}
				}
			}
			if !found {
				t.Errorf("%s has no credential read permission at all", role)
			}
		}
	})

	t.Run("alarm topic key lets CloudWatch publish", func(t *testing.T) {
		key := rs[ref(rs["AlarmTopic"].Properties["KmsMasterKeyId"])]
		if key.Type != "AWS::KMS::Key" {
			t.Fatalf("AlarmTopic KmsMasterKeyId = %v, want a key of this stack (aws/sns drops CloudWatch's alarms)", rs["AlarmTopic"].Properties["KmsMasterKeyId"])
		}
		policy, _ := key.Properties["KeyPolicy"].(map[string]any)
		ok := false
		for _, s := range list(policy["Statement"]) {
			st, _ := s.(map[string]any)
			p, _ := st["Principal"].(map[string]any)
			acts := fmt.Sprint(st["Action"])
			if p["Service"] == "cloudwatch.amazonaws.com" && st["Effect"] == "Allow" && strings.Contains(acts, "kms:Decrypt") && strings.Contains(acts, "kms:GenerateDataKey*") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("key policy %v does not let cloudwatch.amazonaws.com Decrypt and GenerateDataKey*", policy)
		}
	})

	t.Run("HTTP API access log without headers or bodies", func(t *testing.T) {
		stages := ofType(rs, "AWS::ApiGatewayV2::Stage")
		if len(stages) != 1 {
			t.Fatalf("%d stages", len(stages))
		}
		for id, s := range stages {
			al, _ := s.Properties["AccessLogSettings"].(map[string]any)
			format := fmt.Sprint(al["Format"])
			if rs[getAtt(al["DestinationArn"])].Type != "AWS::Logs::LogGroup" || !json.Valid([]byte(format)) {
				t.Fatalf("%s AccessLogSettings = %v, want JSON lines into a log group", id, al)
			}
			for _, leak := range []string{"header", "body", "requestOverride", "authorizer"} {
				if strings.Contains(strings.ToLower(format), strings.ToLower(leak)) {
					t.Errorf("access log format logs %s", leak)
				}
			}
		}
	})

	t.Run("operational alarms and dashboard", func(t *testing.T) {
		for _, id := range []string{"IngestErrorRateAlarm", "IngestThrottleAlarm", "WorkerThrottleAlarm", "WorkerErrorAlarm"} {
			if rs[id].Type != "AWS::CloudWatch::Alarm" || ref(list(rs[id].Properties["AlarmActions"])[0]) != "AlarmTopic" {
				t.Errorf("%s missing or not notifying AlarmTopic", id)
			}
		}
		if len(ofType(rs, "AWS::CloudWatch::Dashboard")) != 1 {
			t.Error("no dashboard")
		}
	})
}

// TestTenantGuarantees checks template-tenant.yaml and its contract with
// the core stack's exports, IAM prefix, queue URL template and the
// worker's dead-letter naming.
func TestTenantGuarantees(t *testing.T) {
	c, tn := render(t, "template.yaml"), render(t, "template-tenant.yaml")
	rs := tn.Resources

	t.Run("plain CloudFormation, three resources", func(t *testing.T) {
		if tn.Transform != nil || len(rs) != 3 {
			t.Errorf("transform %v, %d resources; want none and 3 (queue, DLQ, mapping: the core stack's watch alerts for every tenant)", tn.Transform, len(rs))
		}
	})

	t.Run("FIFO queue redriving to a FIFO DLQ, both retained", func(t *testing.T) {
		q, dlq := rs["Queue"], rs["DeadLetterQueue"]
		if q.Properties["FifoQueue"] != true || dlq.Properties["FifoQueue"] != true {
			t.Error("queue or DLQ is not FIFO")
		}
		rp, _ := q.Properties["RedrivePolicy"].(map[string]any)
		if getAtt(rp["deadLetterTargetArn"]) != "DeadLetterQueue" || rp["maxReceiveCount"] == nil {
			t.Errorf("redrive policy = %v", rp)
		}
		for id, r := range map[string]resource{"Queue": q, "DeadLetterQueue": dlq} {
			if r.DeletionPolicy != "Retain" || r.UpdateReplacePolicy != "Retain" {
				t.Errorf("%s: DeletionPolicy %q UpdateReplacePolicy %q, want Retain", id, r.DeletionPolicy, r.UpdateReplacePolicy)
			}
		}
	})

	t.Run("visibility timeout is at least 6x the core worker timeout", func(t *testing.T) {
		if vis, timeout := num(t, rs["Queue"].Properties["VisibilityTimeout"]), num(t, c.Resources["WorkerFunction"].Properties["Timeout"]); vis < 6*timeout {
			t.Errorf("visibility %v < 6 x worker timeout %v", vis, timeout)
		}
	})

	t.Run("capped mapping to the core worker, partial batch failures, no batching window", func(t *testing.T) {
		m := rs["Mapping"].Properties
		if getAtt(m["EventSourceArn"]) != "Queue" || importName(m["FunctionName"]) != "${CoreStack}-WorkerFunctionArn" {
			t.Errorf("mapping = %v", m)
		}
		if fmt.Sprint(m["BatchSize"]) != "10" || !strings.Contains(fmt.Sprint(m["FunctionResponseTypes"]), "ReportBatchItemFailures") {
			t.Errorf("BatchSize %v, FunctionResponseTypes %v; want 10 (the FIFO maximum) and ReportBatchItemFailures", m["BatchSize"], m["FunctionResponseTypes"])
		}
		if w, ok := m["MaximumBatchingWindowInSeconds"]; ok && fmt.Sprint(w) != "0" {
			t.Errorf("batching window %v on a FIFO mapping", w)
		}
		sc, _ := m["ScalingConfig"].(map[string]any)
		if ref(sc["MaximumConcurrency"]) != "TenantMaxConcurrency" || num(t, tn.Parameters["TenantMaxConcurrency"]["MinValue"]) != 2 {
			t.Errorf("ScalingConfig = %v, want MaximumConcurrency from TenantMaxConcurrency (min 2, Lambda's minimum)", sc)
		}
	})

	t.Run("the queue carries its oldest-message threshold for the core stack's watch", func(t *testing.T) {
		var found bool
		for _, tag := range list(rs["Queue"].Properties["Tags"]) {
			m, _ := tag.(map[string]any)
			if m["Key"] == watch.ThresholdTag && ref(m["Value"]) == "OldestMessageAlarmSeconds" {
				found = true
			}
		}
		if !found {
			t.Errorf("Queue Tags = %v, want %s from OldestMessageAlarmSeconds", rs["Queue"].Properties["Tags"], watch.ThresholdTag)
		}
		if d := num(t, tn.Parameters["OldestMessageAlarmSeconds"]["Default"]); d != watch.DefaultOldestMessage.Seconds() {
			t.Errorf("OldestMessageAlarmSeconds defaults to %v, the watch (for a queue without the tag) to %v", d, watch.DefaultOldestMessage.Seconds())
		}
	})

	t.Run("dead letters live as long as SQS allows and the watch alerts days before they expire", func(t *testing.T) {
		retention := num(t, rs["DeadLetterQueue"].Properties["MessageRetentionPeriod"])
		if retention != watch.DeadLetterRetention.Seconds() {
			t.Errorf("DLQ MessageRetentionPeriod = %v, want %v (14 days, SQS's maximum, as pkg/watch assumes)", retention, watch.DeadLetterRetention.Seconds())
		}
		if left := retention - watch.DefaultDeadLetterExpiry.Seconds(); left < 2*86400 {
			t.Errorf("the watch's expiry rule fires %v s before the dead letter expires, want days", left)
		}
	})

	t.Run("imports are exactly what the core stack and the test stub export, less AlarmTopicArn", func(t *testing.T) {
		var imports []string
		walk(rs, func(m map[string]any) {
			if v, ok := m["Fn::ImportValue"]; ok {
				imports = append(imports, strings.TrimPrefix(sub(v), "${CoreStack}-"))
			}
		})
		slices.Sort(imports)
		imports = slices.Compact(imports)
		var exports []string
		for _, o := range c.Outputs {
			if o.Export.Name != nil {
				exports = append(exports, strings.TrimPrefix(sub(o.Export.Name), "${AWS::StackName}-"))
			}
		}
		slices.Sort(exports)
		// AlarmTopicArn stays exported for the tenant stacks created with
		// per-tenant alarms, until each is updated (template.yaml says so):
		// CloudFormation refuses to remove an export that is imported.
		if !slices.Equal(imports, slices.DeleteFunc(slices.Clone(exports), func(e string) bool { return e == "AlarmTopicArn" })) {
			t.Errorf("template-tenant.yaml imports %v, template.yaml exports %v", imports, exports)
		}
		stub, err := os.ReadFile(filepath.Join(root(), "scripts", "tenant", "testdata", "core-exports.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range exports {
			if !strings.Contains(string(stub), "${AWS::StackName}-"+e) {
				t.Errorf("scripts/tenant/testdata/core-exports.yaml lacks export %s", e)
			}
		}
		// tenant.sh add reads the core stack's WorkerMaxAttempts.
		if got, want := render(t, "scripts/tenant/testdata/core-exports.yaml").Parameters["WorkerMaxAttempts"]["Default"], c.Parameters["WorkerMaxAttempts"]["Default"]; got != want {
			t.Errorf("scripts/tenant/testdata/core-exports.yaml's WorkerMaxAttempts default = %v, want template.yaml's %v", got, want)
		}
	})

	t.Run("queue names: the core's URL template, IAM prefix and the worker's DLQ naming agree", func(t *testing.T) {
		const core, id = "hookpack", "acme"
		q, dlq := queueNames(t, tn, core, id)
		prefix := strings.ReplaceAll(sub(c.Outputs["QueueNamePrefix"].Value), "${AWS::StackName}", core)
		url := queue.URL(strings.ReplaceAll(sub(envVars(c.Resources["IngestFunction"])["QUEUE_URL_TEMPLATE"]), "${AWS::StackName}", core), id)
		if !strings.HasSuffix(url, "/"+q) || !strings.HasPrefix(q, prefix) {
			t.Errorf("ingest sends to %s; the tenant stack creates %s (prefix %s)", url, q, prefix)
		}
		if want, err := worker.DLQURL(url); err != nil || !strings.HasSuffix(want, "/"+dlq) {
			t.Errorf("worker dead-letters to %s (%v); the tenant stack creates %s", want, err, dlq)
		}
		if !strings.HasSuffix(dlq, "-dlq.fifo") || strings.HasSuffix(q, "-dlq.fifo") {
			t.Errorf("queue %s / DLQ %s: only the DLQ may match the ingest Deny on *-dlq.fifo", q, dlq)
		}
		// Another stack whose name starts with this one's never matches its prefix.
		other, _ := queueNames(t, tn, core+"-staging", id)
		if strings.HasPrefix(other, prefix) {
			t.Errorf("stack %s-staging's queue %s matches %s's prefix %s", core, other, core, prefix)
		}
	})
}

// SQS's redrive records no reason: with the defaults, the worker (which
// counts real attempts) must always dead-letter a message first, however
// long it waited behind earlier failures of its conversation.
func TestMaxReceiveCountLeavesTheWorkerTheLastWord(t *testing.T) {
	attempts := int(num(t, render(t, "template.yaml").Parameters["WorkerMaxAttempts"]["Default"]))
	receives := int(num(t, render(t, "template-tenant.yaml").Parameters["MaxReceiveCount"]["Default"]))
	if want := worker.MinMaxReceiveCount(attempts); receives < want || receives > 1000 {
		t.Errorf("tenant MaxReceiveCount default = %d, want %d..1000 for the core's WorkerMaxAttempts %d", receives, want, attempts)
	}
}

// The default deployment retries a destination's own failures for its
// whole default horizon: the template's WorkerMaxAttempts, with the
// worker's backoff (the template's RETRY_BASE_DELAY and RETRY_MAX_DELAY,
// or the defaults) at its least jitter, span at least tenant.DefaultHorizon
// from the first attempt, so the horizon, which dead-letters with its
// reason, ends the retries before the count could.
func TestDefaultAttemptsOutlastTheDefaultHorizon(t *testing.T) {
	core := render(t, "template.yaml")
	attempts := int(num(t, core.Parameters["WorkerMaxAttempts"]["Default"]))
	if attempts == 0 {
		return // no limit: only the horizon ends the retries
	}
	r := worker.Retry{Jitter: func() float64 { return 0 }}
	env := envVars(core.Resources["WorkerFunction"])
	for name, d := range map[string]*time.Duration{"RETRY_BASE_DELAY": &r.Base, "RETRY_MAX_DELAY": &r.Max} {
		v, ok := env[name]
		if !ok {
			continue
		}
		s, _ := v.(string)
		parsed, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("WorkerFunction %s = %v: not a Go duration", name, v)
		}
		*d = parsed
	}
	var span time.Duration
	for n := 1; n < attempts; n++ {
		span += r.Delay(n, 0)
	}
	if span < tenant.DefaultHorizon {
		t.Errorf("WorkerMaxAttempts default %d spans %v at least (least jitter), want ≥ tenant.DefaultHorizon %v: a failing destination's retries would end before its horizon", attempts, span, tenant.DefaultHorizon)
	}
}

// MaxTenants is the largest deployment TestScale checks. Beyond it the
// account quotas in docs/scale.md bind, not the templates.
const MaxTenants = 1000

// SQS and CloudFormation name limits, and the template body a
// create-stack request may carry inline (scripts/tenant passes it so).
const (
	maxQueueName     = 80
	maxStackName     = 128
	maxTemplateBody  = 51200
	maxStackResource = 500
)

// TestScale renders the deployment for 1, 10 and MaxTenants tenants: the
// core stack once and one tenant stack per tenant, with the longest ids
// the templates allow under the longest core stack name. cfn-lint does not
// evaluate parameter values (`cfn-lint --parameters TenantId='BAD!'`
// passes) and TestLint lints each template once, so the per-tenant values
// are checked here: the template's own AllowedPattern, SQS, CloudFormation
// and CloudWatch name limits, uniqueness, and resources per stack.
func TestScale(t *testing.T) {
	c, tn := render(t, "template.yaml"), render(t, "template-tenant.yaml")
	body, err := os.ReadFile(filepath.Join(root(), "template-tenant.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > maxTemplateBody {
		t.Errorf("template-tenant.yaml is %d bytes; create-stack --template-body takes at most %d", len(body), maxTemplateBody)
	}
	if len(c.Resources) > maxStackResource/2 {
		t.Errorf("core stack has %d resources", len(c.Resources))
	}
	idPattern := regexp.MustCompile(fmt.Sprint(tn.Parameters["TenantId"]["AllowedPattern"]))
	corePattern := regexp.MustCompile(fmt.Sprint(tn.Parameters["CoreStack"]["AllowedPattern"]))
	core := "h" + strings.Repeat("k", 29) // the longest core name CoreStack allows
	if !corePattern.MatchString(core) || corePattern.MatchString(core+"k") {
		t.Fatalf("CoreStack pattern %s should allow exactly 30 characters", corePattern)
	}
	for _, n := range []int{1, 10, MaxTenants} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			seen := map[string]string{}
			unique := func(kind, name, id string) {
				if prev, ok := seen[kind+name]; ok {
					t.Fatalf("%s %s of tenant %s collides with tenant %s", kind, name, id, prev)
				}
				seen[kind+name] = id
			}
			resources := len(c.Resources)
			for i := range n {
				id := fmt.Sprintf("tenant-%033d", i) // 40 characters, the maximum
				if !idPattern.MatchString(id) {
					t.Fatalf("tenant id %s does not match the template's %s", id, idPattern)
				}
				stack := core + "-tenant-" + id // scripts/tenant's naming
				q, dlq := queueNames(t, tn, core, id)
				for kind, names := range map[string][]string{"stack": {stack}, "queue": {q, dlq}} {
					limit := map[string]int{"stack": maxStackName, "queue": maxQueueName}[kind]
					for _, name := range names {
						if len(name) > limit {
							t.Fatalf("%s name %s is %d characters, the limit is %d", kind, name, len(name), limit)
						}
						unique(kind, name, id)
					}
				}
				if len(tn.Resources) > maxStackResource {
					t.Fatalf("tenant stack has %d resources", len(tn.Resources))
				}
				resources += len(tn.Resources)
			}
			t.Logf("%d tenants: %d stacks, %d resources in all, at most %d in one stack", n, n+1, resources, max(len(c.Resources), len(tn.Resources)))
		})
	}
}

// queueNames resolves the tenant template's queue and DLQ names for a core
// stack and tenant, with the prefix the core stack exports.
func queueNames(t *testing.T, tn tpl, core, id string) (q, dlq string) {
	t.Helper()
	prefix := core + "_" // template.yaml's QueueNamePrefix, checked in TestTenantGuarantees
	name := func(r resource) string {
		s := sub(r.Properties["QueueName"])
		return strings.NewReplacer("${Prefix}", prefix, "${TenantId}", id).Replace(s)
	}
	q, dlq = name(tn.Resources["Queue"]), name(tn.Resources["DeadLetterQueue"])
	if strings.Contains(q+dlq, "$") {
		t.Fatalf("unresolved queue names %s, %s", q, dlq)
	}
	return q, dlq
}

// sub returns the string of an Fn::Sub (either form) or a plain string.
func sub(v any) string {
	if m, ok := v.(map[string]any); ok {
		if s, ok := m["Fn::Sub"]; ok {
			if l, ok := s.([]any); ok {
				return fmt.Sprint(l[0])
			}
			return fmt.Sprint(s)
		}
	}
	return fmt.Sprint(v)
}

func ref(v any) string {
	if m, ok := v.(map[string]any); ok {
		return fmt.Sprint(m["Ref"])
	}
	return ""
}

func getAtt(v any) string {
	if m, ok := v.(map[string]any); ok {
		if l, ok := m["Fn::GetAtt"].([]any); ok && len(l) > 0 {
			return fmt.Sprint(l[0])
		}
	}
	return ""
}

func importName(v any) string {
	if m, ok := v.(map[string]any); ok {
		return sub(m["Fn::ImportValue"])
	}
	return ""
}

func walk(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, e := range x {
			walk(e, f)
		}
	case []any:
		for _, e := range x {
			walk(e, f)
		}
	case map[string]resource:
		for _, r := range x {
			walk(r.Properties, f)
		}
	}
}

func envVars(r resource) map[string]any {
	env, _ := r.Properties["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	return vars
}

func num(t *testing.T, v any) float64 {
	t.Helper()
	var f float64
	if _, err := fmt.Sscan(fmt.Sprint(v), &f); err != nil {
		t.Fatalf("%v is not a number", v)
	}
	return f
}

func statements(role resource) []map[string]any {
	var out []map[string]any
	pols, _ := role.Properties["Policies"].([]any)
	for _, p := range pols {
		doc, _ := p.(map[string]any)["PolicyDocument"].(map[string]any)
		for _, s := range list(doc["Statement"]) {
			if m, ok := s.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}
