package rehearsal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

// requireTools skips the rehearsal where its tools are missing, and fails
// under CI=true, where they must be there.
func requireTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"aws", "python3", "moto_server"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s missing under CI=true (`scripts/prerequisites.sh aws` says how to install each tool the rehearsal needs): %v", tool, err)
			}
			t.Skipf("%s missing: %v", tool, err)
		}
	}
}

func run(t *testing.T, endpoint, stack string, mutate func(Template)) *Report {
	t.Helper()
	start := time.Now()
	rep, err := Run(context.Background(), Options{Root: awstest.ModuleRoot(), Endpoint: endpoint, StackName: stack, Mutate: mutate,
		Logf: func(f string, a ...any) { t.Logf("%5.1fs "+f, append([]any{time.Since(start).Seconds()}, a...)...) }})
	if err != nil {
		t.Fatalf("Run(%s) = %v", stack, err)
	}
	return rep
}

// TestRehearsal is `make rehearse` as a test: the whole pipeline on what
// the stacks created, every call allowed by its role, every statement of
// either role needed by a recorded call or a must-deny probe, and every
// grant no call used explained in template.yaml.
func TestRehearsal(t *testing.T) {
	t.Parallel()
	requireTools(t)
	rep := run(t, awstest.Moto(t), "hookpack", nil)
	var out bytes.Buffer
	rep.Write(&out)
	t.Log("\n" + out.String())
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(awstest.ModuleRoot(), "docs", "iam.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range CheckIAMDoc(string(md), rep) {
		t.Error(p)
	}
	for _, f := range rep.IAM.Functions {
		for _, s := range f.WithoutEach {
			if len(s.Breaks) == 0 && !strings.HasPrefix(s.Policy, "arn:") {
				t.Errorf("%s: without statement %s/%s every recorded call is still allowed and every must-deny probe denied: remove it or exercise it", f.Name, s.Policy, s.Sid)
			}
		}
	}
	src, err := os.ReadFile(filepath.Join(awstest.ModuleRoot(), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var comments strings.Builder
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			comments.WriteString(line + "\n")
		}
	}
	for _, g := range rep.Unused() {
		if !strings.Contains(comments.String(), g.Action) {
			t.Errorf("%s/%s grants %s on %s, which no rehearsal call used: remove it, or say in a template.yaml comment naming %s why it stays", g.Policy, g.Sid, g.Action, g.Resource, g.Action)
		}
	}
	providers := map[string]bool{}
	for _, d := range rep.Deliveries {
		providers[strings.Split(d.Name, "/")[0]] = true
	}
	dirs, _ := filepath.Glob(filepath.Join(awstest.ModuleRoot(), "events", "samples", "*", "*.request.json"))
	for _, d := range dirs {
		if p := filepath.Base(filepath.Dir(d)); !providers[p] {
			t.Errorf("no delivery of provider %s went through the rehearsal", p)
		}
	}
}

// TestRehearsalFailsWithoutStatement removes one statement at a time from
// the rendered template's roles and expects the rehearsal to fail, naming
// the statement. The runs (each its own stacks on the shared moto) go in
// parallel with each other and TestRehearsal, -parallel at a time.
//
// It runs in make test-long (build tag long): make test's TestRehearsal
// evaluates the removal of every statement on the calls it recorded.
func TestRehearsalFailsWithoutStatement(t *testing.T) {
	if !everyStatement {
		t.Skip("make test-long runs the rehearsal without each statement; TestRehearsal evaluates each removal on its recorded calls")
	}
	t.Parallel()
	requireTools(t)
	declared, err := Render(context.Background(), awstest.ModuleRoot(), "template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sids := roleSids(declared)
	if len(sids) < 8 {
		t.Fatalf("found %d statements in the roles (%v); the template's roles moved", len(sids), sids)
	}
	endpoint := awstest.Moto(t)
	for i, sid := range sids {
		t.Run(sid, func(t *testing.T) {
			t.Parallel()
			rep := run(t, endpoint, fmt.Sprintf("rh%d-%d", i, time.Now().UnixNano()%1_000_000), func(tpl Template) { removeStatement(tpl, sid) })
			err := rep.Err()
			if err == nil {
				t.Fatalf("the rehearsal passed without statement %s", sid)
			}
			if !strings.Contains(err.Error(), sid) {
				t.Fatalf("the rehearsal failed without naming the missing statement %s:\n%v", sid, err)
			}
			t.Logf("without %s: %v", sid, err)
		})
	}
}

// roleSids are the Sids of every inline statement of the template's roles.
func roleSids(t Template) []string {
	var out []string
	for _, id := range sortedKeys(t.Resources()) {
		eachPolicy(t, id, func(doc map[string]any) {
			st, _ := doc["Statement"].([]any)
			for _, s := range st {
				out = append(out, fmt.Sprint(s.(map[string]any)["Sid"]))
			}
		})
	}
	return out
}

// removeStatement deletes the statement sid from every role of t.
func removeStatement(t Template, sid string) {
	for id := range t.Resources() {
		eachPolicy(t, id, func(doc map[string]any) {
			st, _ := doc["Statement"].([]any)
			doc["Statement"] = slices.DeleteFunc(st, func(s any) bool { return s.(map[string]any)["Sid"] == sid })
		})
	}
}

// eachPolicy calls f with each inline policy document of role id.
func eachPolicy(t Template, id string, f func(doc map[string]any)) {
	res, _ := t.Resources()[id].(map[string]any)
	if res["Type"] != "AWS::IAM::Role" {
		return
	}
	props, _ := res["Properties"].(map[string]any)
	ps, _ := props["Policies"].([]any)
	for _, p := range ps {
		if doc, ok := p.(map[string]any)["PolicyDocument"].(map[string]any); ok {
			f(doc)
		}
	}
}
