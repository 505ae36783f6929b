// Package template holds the checks on template.yaml that cfn-lint cannot
// make: the properties this pack's guarantees rest on. The template is
// rendered by render.py through cfn-lint's own pipeline (Fn::ForEach
// expanded, SAM transformed), so the assertions see what CloudFormation
// will deploy.
package template

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/worker"
)

type resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

type rendered struct {
	Resources  map[string]resource `json:"Resources"`
	Parameters map[string]struct {
		Default any `json:"Default"`
	} `json:"Parameters"`
}

func render(t *testing.T, tenants string) map[string]resource {
	t.Helper()
	return renderTemplate(t, tenants).Resources
}

func renderTemplate(t *testing.T, tenants string) rendered {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	cmd := exec.Command("python3", filepath.Join(dir, "render.py"), filepath.Join(dir, "..", "..", "template.yaml"), tenants)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("render template: %v\n%s", err, stderr)
	}
	var tpl rendered
	if err := json.Unmarshal(out, &tpl); err != nil {
		t.Fatal(err)
	}
	return tpl
}

// SQS's redrive records no reason: with the defaults, the worker (which
// counts real attempts) must always dead-letter a message first, however
// long it waited behind earlier failures of its conversation.
func TestMaxReceiveCountLeavesTheWorkerTheLastWord(t *testing.T) {
	p := renderTemplate(t, "acme").Parameters
	number := func(name string) int {
		var n int
		if _, err := fmt.Sscan(fmt.Sprint(p[name].Default), &n); err != nil {
			t.Fatalf("parameter %s default %v is not a number", name, p[name].Default)
		}
		return n
	}
	attempts, receives := number("WorkerMaxAttempts"), number("MaxReceiveCount")
	if want := worker.MinMaxReceiveCount(attempts); receives < want || receives > 1000 {
		t.Errorf("MaxReceiveCount default = %d, want %d..1000 for WorkerMaxAttempts %d", receives, want, attempts)
	}
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

func TestTemplateGuarantees(t *testing.T) {
	rs := render(t, "acme,globex-eu")

	t.Run("every tenant has a FIFO queue redriving to a FIFO DLQ", func(t *testing.T) {
		for _, tenant := range []string{"acme", "globexeu"} {
			q, ok := rs["TenantQueue"+tenant]
			if !ok {
				t.Fatalf("no TenantQueue%s", tenant)
			}
			dlq := rs["TenantDLQ"+tenant]
			if q.Properties["FifoQueue"] != true || dlq.Properties["FifoQueue"] != true {
				t.Errorf("%s: queue or DLQ is not FIFO", tenant)
			}
			rp, _ := q.Properties["RedrivePolicy"].(map[string]any)
			if !strings.Contains(fmt.Sprint(rp["deadLetterTargetArn"]), "TenantDLQ"+tenant) || rp["maxReceiveCount"] == nil {
				t.Errorf("%s: redrive policy = %v", tenant, rp)
			}
		}
	})

	t.Run("idempotency table has TTL on expiration and PITR", func(t *testing.T) {
		tbl := rs["IdempotencyTable"].Properties
		ttl, _ := tbl["TimeToLiveSpecification"].(map[string]any)
		if ttl["AttributeName"] != "expiration" || ttl["Enabled"] != true {
			t.Errorf("TTL = %v", ttl)
		}
		for id, r := range ofType(rs, "AWS::DynamoDB::Table") {
			pitr, _ := r.Properties["PointInTimeRecoverySpecification"].(map[string]any)
			if pitr["PointInTimeRecoveryEnabled"] != true {
				t.Errorf("%s: point-in-time recovery off", id)
			}
			if r.Properties["BillingMode"] != "PAY_PER_REQUEST" {
				t.Errorf("%s: not on-demand", id)
			}
		}
	})

	t.Run("functions are arm64 provided.al2023 with JSON logs", func(t *testing.T) {
		fns := ofType(rs, "AWS::Lambda::Function")
		if len(fns) == 0 {
			t.Fatal("no functions")
		}
		for id, f := range fns {
			if f.Properties["Runtime"] != "provided.al2023" || fmt.Sprint(f.Properties["Architectures"]) != "[arm64]" {
				t.Errorf("%s: runtime %v on %v", id, f.Properties["Runtime"], f.Properties["Architectures"])
			}
			lc, _ := f.Properties["LoggingConfig"].(map[string]any)
			if lc["LogFormat"] != "JSON" {
				t.Errorf("%s: LogFormat = %v", id, lc["LogFormat"])
			}
		}
	})

	t.Run("IAM statements name their resources", func(t *testing.T) {
		for id, role := range ofType(rs, "AWS::IAM::Role") {
			for _, st := range statements(role) {
				for _, r := range list(st["Resource"]) {
					if s, ok := r.(string); ok && (s == "*" || strings.HasSuffix(s, ":*")) {
						t.Errorf("%s: statement %v has wildcard resource %q", id, st["Sid"], s)
					}
				}
			}
		}
	})

	t.Run("ingest cannot read outbound credentials", func(t *testing.T) {
		role := rs["IngestFunctionRole"]
		found := false
		for _, st := range statements(role) {
			for _, a := range list(st["Action"]) {
				if strings.HasPrefix(fmt.Sprint(a), "ssm:") || strings.HasPrefix(fmt.Sprint(a), "secretsmanager:") {
					res := fmt.Sprint(st["Resource"])
					if a == "ssm:GetParametersByPath" {
						// The list of tenant ids, a path that holds no credentials.
						if !strings.HasSuffix(strings.TrimRight(res, "}]"), "/tenant-ids") {
							t.Errorf("ingest lists parameters at %s, want only the tenant-ids path", res)
						}
						continue
					}
					found = true
					if a != "ssm:GetParameter" || !strings.Contains(res, "/tenants/*/inbound") || strings.Contains(res, "outbound") {
						t.Errorf("ingest reads credentials with %v at %s", a, res)
					}
				}
			}
		}
		if !found {
			t.Error("ingest has no credential read permission at all")
		}
	})

	t.Run("every tenant queue has a capped mapping to the worker", func(t *testing.T) {
		for _, tenant := range []string{"acme", "globexeu"} {
			m, ok := rs["TenantMapping"+tenant]
			if !ok {
				t.Fatalf("no TenantMapping%s", tenant)
			}
			if !strings.Contains(fmt.Sprint(m.Properties["EventSourceArn"]), "TenantQueue"+tenant) || !strings.Contains(fmt.Sprint(m.Properties["FunctionName"]), "WorkerFunction") {
				t.Errorf("%s mapping = %v", tenant, m.Properties)
			}
			sc, _ := m.Properties["ScalingConfig"].(map[string]any)
			if sc["MaximumConcurrency"] == nil {
				t.Errorf("%s mapping has no MaximumConcurrency", tenant)
			}
			if fmt.Sprint(m.Properties["BatchSize"]) != "10" {
				t.Errorf("%s BatchSize = %v, want 10 (the FIFO maximum)", tenant, m.Properties["BatchSize"])
			}
			for _, alarm := range []string{"TenantDLQDepthAlarm", "TenantOldestMessageAlarm"} {
				if _, ok := rs[alarm+tenant]; !ok {
					t.Errorf("no %s%s", alarm, tenant)
				}
			}
		}
	})

	t.Run("visibility timeout is at least 6x the worker timeout", func(t *testing.T) {
		timeout := num(t, rs["WorkerFunction"].Properties["Timeout"])
		for id, q := range ofType(rs, "AWS::SQS::Queue") {
			if strings.HasPrefix(id, "TenantQueue") {
				if vis := num(t, q.Properties["VisibilityTimeout"]); vis < 6*timeout {
					t.Errorf("%s: visibility %v < 6 x worker timeout %v", id, vis, timeout)
				}
			}
		}
	})

	t.Run("worker reads outbound credentials only", func(t *testing.T) {
		for _, st := range statements(rs["WorkerFunctionRole"]) {
			for _, a := range list(st["Action"]) {
				if strings.HasPrefix(fmt.Sprint(a), "ssm:") {
					if res := fmt.Sprint(st["Resource"]); !strings.Contains(res, "/tenants/*/outbound") || strings.Contains(res, "inbound") {
						t.Errorf("worker reads credentials at %s", res)
					}
				}
			}
		}
	})

	t.Run("operational alarms exist", func(t *testing.T) {
		for _, id := range []string{"IngestErrorRateAlarm", "IngestThrottleAlarm", "WorkerThrottleAlarm", "WorkerErrorAlarm"} {
			if rs[id].Type != "AWS::CloudWatch::Alarm" {
				t.Errorf("no %s", id)
			}
		}
		if len(ofType(rs, "AWS::CloudWatch::Dashboard")) != 1 {
			t.Error("no dashboard")
		}
	})

	t.Run("event source mappings report partial batch failures without batching window", func(t *testing.T) {
		if len(ofType(rs, "AWS::Lambda::EventSourceMapping")) == 0 {
			t.Fatal("no event source mappings")
		}
		for id, m := range ofType(rs, "AWS::Lambda::EventSourceMapping") {
			if !strings.Contains(fmt.Sprint(m.Properties["FunctionResponseTypes"]), "ReportBatchItemFailures") {
				t.Errorf("%s: no ReportBatchItemFailures", id)
			}
			if w, ok := m.Properties["MaximumBatchingWindowInSeconds"]; ok && fmt.Sprint(w) != "0" {
				t.Errorf("%s: batching window %v on a FIFO mapping", id, w)
			}
		}
	})
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
