// Package tenant tests scripts/tenant/tenant.sh, the onboarding command,
// against a fake aws CLI that records every call and answers like
// CloudFormation, SSM and SQS would.
package tenant

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const fakeAWS = `#!/usr/bin/env bash
echo "$*" >> "$AWS_LOG"
case "$1 $2" in
  "cloudformation describe-stacks")
    case "$*" in
      *ParameterKey==*TenantIds*) cat "$STATE" ;;
      *"Parameters[].ParameterKey"*) echo "TenantIds	DedupRetentionHours	AlarmEmail" ;;
      *WebhookBaseUrl*) echo "https://abc.execute-api.us-east-1.amazonaws.com" ;;
    esac ;;
  "cloudformation update-stack")
    python3 -c 'import json,sys; p=json.loads(sys.argv[1]); print([x["ParameterValue"] for x in p if x["ParameterKey"]=="TenantIds"][0])' "${@: -1}" > "$STATE" ;;
  "ssm get-parameters-by-path") cat "$IDS" 2>/dev/null || true ;;
  "ssm put-parameter"|"ssm delete-parameter")
    python3 - "$IDS" "$@" <<'PY'
import sys
ids, args = sys.argv[1], sys.argv[2:]
name = args[args.index("--name") + 1]
if "/tenant-ids/" in name:
    try:
        rows = [l.rstrip("\n").split("\t") for l in open(ids) if l.strip()]
    except FileNotFoundError:
        rows = []
    rows = [r for r in rows if r[0] != name]
    if args[1] == "put-parameter":
        rows.append([name, args[args.index("--value") + 1]])
    open(ids, "w").write("".join("\t".join(r) + "\n" for r in sorted(rows)))
PY
    ;;
  "sqs get-queue-url") echo "https://sqs/q" ;;
  "sqs get-queue-attributes") echo "${QUEUE_DEPTH:-0}" ;;
esac
`

type env struct {
	dir, log, state, idsFile string
}

func setup(t *testing.T, ids string) env {
	t.Helper()
	dir := t.TempDir()
	e := env{dir: dir, log: filepath.Join(dir, "aws.log"), state: filepath.Join(dir, "state"), idsFile: filepath.Join(dir, "tenant-ids")}
	if err := os.WriteFile(filepath.Join(dir, "aws"), []byte(fakeAWS), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.state, []byte(ids+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"in.json": `{"providers":{"stripe":{"secrets":["whsec_x"]}}}`, "out.json": `{"targetUrl":"https://t","secrets":["whsec_y"]}`, "bad.json": `{`,
		"empty-secret.json": `{"providers":{"stripe":{"secrets":[""]}}}`, "typo.json": `{"providers":{"stripe":{"secret":["whsec_x"]}}}`,
		"unknown-provider.json": `{"providers":{"paypal":{"secrets":["x"]}}}`, "bad-target.json": `{"targetUrl":"/relative","secrets":["whsec_y"]}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e env) run(t *testing.T, extra []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("./tenant.sh", args...)
	cmd.Env = append(os.Environ(), "PATH="+e.dir+":"+os.Getenv("PATH"), "AWS_LOG="+e.log, "STATE="+e.state, "IDS="+e.idsFile, "STACK_NAME=hp")
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (e env) calls(t *testing.T) string {
	b, _ := os.ReadFile(e.log)
	return string(b)
}

func (e env) listed(t *testing.T) string {
	b, _ := os.ReadFile(e.idsFile)
	return strings.TrimSpace(string(b))
}

func (e env) ids(t *testing.T) string {
	b, _ := os.ReadFile(e.state)
	return strings.TrimSpace(string(b))
}

func TestAdd(t *testing.T) {
	e := setup(t, "demo")
	out, err := e.run(t, nil, "add", "acme", e.dir+"/in.json", e.dir+"/out.json")
	if err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	calls := e.calls(t)
	for _, want := range []string{
		"ssm put-parameter --name /hp/tenants/acme/inbound --type SecureString --overwrite --value file://",
		"ssm put-parameter --name /hp/tenants/acme/outbound --type SecureString",
		"cloudformation update-stack --stack-name hp --use-previous-template --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND",
		`{"ParameterKey":"DedupRetentionHours","UsePreviousValue":true}`,
		"cloudformation wait stack-update-complete --stack-name hp",
	} {
		if !strings.Contains(calls, want) {
			t.Errorf("calls lack %q:\n%s", want, calls)
		}
	}
	if e.ids(t) != "demo,acme" {
		t.Errorf("TenantIds = %q, want demo,acme", e.ids(t))
	}
	if got := e.listed(t); got != "/hp/tenant-ids/0\tacme" {
		t.Errorf("listed tenant ids = %q, want acme in /hp/tenant-ids/0", got)
	}
	if !strings.Contains(out, "/webhooks/acme/<provider>") {
		t.Errorf("output lacks the webhook URL:\n%s", out)
	}
}

func TestAddRejects(t *testing.T) {
	tests := []struct {
		name, ids string
		args      []string
		want      string
	}{
		{"bad id", "demo", []string{"add", "Acme!", "in.json"}, "invalid tenant id"},
		{"collision", "acme-eu", []string{"add", "acmeeu", "in.json"}, "collides"},
		{"bad json", "demo", []string{"add", "acme", "bad.json"}, "not valid JSON"},
		{"empty secret", "demo", []string{"add", "acme", "empty-secret.json"}, `tenant "acme": providers.stripe.secrets[0]: empty secret`},
		{"misspelt field", "demo", []string{"add", "acme", "typo.json"}, `unknown field "secret"`},
		{"unknown provider", "demo", []string{"add", "acme", "unknown-provider.json"}, `providers.paypal: unknown provider`},
		{"bad target url", "demo", []string{"add", "acme", "in.json", "bad-target.json"}, `tenant "acme": outbound.targetUrl`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, tt.ids)
			args := append([]string{}, tt.args...)
			for i := 2; i < len(args); i++ {
				args[i] = e.dir + "/" + args[i]
			}
			out, err := e.run(t, nil, args...)
			if err == nil || !strings.Contains(out, tt.want) {
				t.Fatalf("add = %v %s, want failure containing %q", err, out, tt.want)
			}
			if strings.Contains(e.calls(t), "update-stack") || strings.Contains(e.calls(t), "put-parameter") {
				t.Errorf("a rejected add changed something:\n%s", e.calls(t))
			}
		})
	}
}

func TestRemove(t *testing.T) {
	e := setup(t, "demo,acme")
	if err := os.WriteFile(e.idsFile, []byte("/hp/tenant-ids/0\tdemo,acme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := e.run(t, []string{"QUEUE_DEPTH=3"}, "remove", "acme"); err == nil || !strings.Contains(out, "still holds 3 messages") {
		t.Fatalf("remove with messages = %v %s, want refusal", err, out)
	}
	if e.ids(t) != "demo,acme" {
		t.Fatalf("refused remove changed TenantIds to %q", e.ids(t))
	}
	if out, err := e.run(t, nil, "remove", "acme"); err != nil {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	if e.ids(t) != "demo" || !strings.Contains(e.calls(t), "ssm delete-parameters --names /hp/tenants/acme/inbound /hp/tenants/acme/outbound") {
		t.Errorf("TenantIds = %q, calls:\n%s", e.ids(t), e.calls(t))
	}
	if got := e.listed(t); got != "/hp/tenant-ids/0\tdemo" {
		t.Errorf("listed tenant ids = %q, want only demo", got)
	}
	if out, err := e.run(t, nil, "remove", "demo"); err == nil || !strings.Contains(out, "last tenant") {
		t.Errorf("removing the last tenant = %v %s, want refusal", err, out)
	}
}
