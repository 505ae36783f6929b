package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// TestRun runs the command against a provisioned local stack: exit status
// and output for a summary, an unknown event, an unknown tenant and bad
// usage.
func TestRun(t *testing.T) {
	ctx := context.Background()
	moto, ddb := awstest.Moto(t), awstest.DynamoDBLocal(t)
	cfg, err := emulator.AWSConfig(ctx, moto, ddb)
	if err != nil {
		t.Fatal(err)
	}
	tenants, err := tenant.LoadFile(filepath.Join(awstest.ModuleRoot(), "events", "tenants.json"), provider.Registry())
	if err != nil {
		t.Fatal(err)
	}
	name := awstest.Name(t)
	name = "ir" + name[len(name)-9:]
	local := []string{"-local", "-name", name, "-endpoint", moto, "-dynamodb-endpoint", ddb}
	if _, err := devstack.Provision(ctx, cfg, name, tenants, devstack.DefaultQueue); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		args      []string
		code      int
		out, errs string
	}{
		{"summary", []string{"-tenant", "demo", "-summary"}, 0, "0 visible, 0 in flight, 0 delayed; DLQ: 0", ""},
		{"summary as JSON", []string{"-tenant", "demo", "-summary", "-json"}, 0, `"tenant":"demo"`, ""},
		{"unknown event", []string{"-tenant", "demo", "evt_never"}, 3, "", "no trace of the event"},
		{"unknown tenant", []string{"-tenant", "nobody", "-summary"}, 2, "", "no queue for the tenant"},
		{"unknown tenant's event", []string{"-tenant", "nobody", "evt_1"}, 2, "", "no queue for the tenant"},
		{"event and summary", []string{"-tenant", "demo", "-summary", "evt_1"}, 2, "", "usage"},
		{"no tenant", []string{"evt_1"}, 2, "", "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			code := run(ctx, append(append([]string{}, local...), tt.args...), &out, &errs)
			if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errs.String(), tt.errs) {
				t.Errorf("inspect %s = %d\nstdout: %s\nstderr: %s\nwant %d, stdout with %q, stderr with %q", strings.Join(tt.args, " "), code, out.String(), errs.String(), tt.code, tt.out, tt.errs)
			}
		})
	}
}

// TestRunMalformed: malformed input exits 2 and says what is malformed,
// before any call (the endpoints lead nowhere: a call would fail with 1).
func TestRunMalformed(t *testing.T) {
	nowhere := []string{"-local", "-endpoint", "http://127.0.0.1:1", "-dynamodb-endpoint", "http://127.0.0.1:1"}
	tests := []struct {
		name string
		args []string
		errs []string
	}{
		{"an event key of another tenant and no provider", []string{"-tenant", "demo", "bad#id#with spaces"},
			[]string{`malformed event key "bad#id#with spaces"`, "its tenant is bad, not demo", `"id" is not a provider`}},
		{"an empty event id", []string{"-tenant", "demo", "demo#github#"}, []string{`malformed event key "demo#github#"`, "event id after the second '#' is empty"}},
		{"an invalid tenant id", []string{"-tenant", "Bad_Tenant!", "evt_1"}, []string{`malformed tenant id "Bad_Tenant!": only a-z, 0-9 and '-'`}},
		{"an invalid tenant id's summary", []string{"-tenant", "Bad_Tenant!", "-summary"}, []string{`malformed tenant id "Bad_Tenant!"`}},
		{"an unknown provider", []string{"-tenant", "demo", "-provider", "paypal", "evt_1"}, []string{`malformed -provider "paypal": not a provider (asana,`}},
		{"an effect name", []string{"-tenant", "demo", "-effects", "mark paid", "evt_1"}, []string{"malformed -effects"}},
		{"every problem", []string{"-tenant", "Bad_Tenant!", "-provider", "paypal", "demo#github#"},
			[]string{"malformed tenant id", "malformed -provider", "its tenant is demo, not Bad_Tenant!", "is empty"}},
		{"no tenant", []string{"evt_1"}, []string{"usage"}},
		{"no event", []string{"-tenant", "demo"}, []string{"usage"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			code := run(context.Background(), append(append([]string{}, nowhere...), tt.args...), &out, &errs)
			if code != 2 || out.Len() > 0 {
				t.Errorf("inspect %s = %d, stdout %q, want 2 and nothing", strings.Join(tt.args, " "), code, out.String())
			}
			for _, w := range tt.errs {
				if !strings.Contains(errs.String(), w) {
					t.Errorf("inspect %s: stderr %q, want %q in it", strings.Join(tt.args, " "), errs.String(), w)
				}
			}
		})
	}
	// A well-formed query reaches the stores; nowhere, it is a failed call.
	var errs bytes.Buffer
	if code := run(context.Background(), append(append([]string{}, nowhere...), "-tenant", "demo", "evt_1"), io.Discard, &errs); code != 1 {
		t.Errorf("inspect -tenant demo evt_1 without a stack = %d (%s), want 1", code, errs.String())
	}
}

// TestMakeInspectStatus: make exits 2 whenever a recipe fails (GNU make's
// statuses are 0, 2, and 1 only under -q), so `make inspect` shows the
// command's own status in make's "Error N" line, which `go run` (exit 1
// for any failure) would hide.
func TestMakeInspectStatus(t *testing.T) {
	tests := []struct {
		name string
		vars []string
		want []string
	}{
		{"malformed", []string{"TENANT=demo", "EVENT=demo#github#"}, []string{"malformed event key", "] Error 2"}},
		{"usage", nil, []string{"usage: make inspect", "] Error 2"}},
		// make's $(if $(EVENT)…) reads EVENT= as no EVENT: the summary.
		{"an empty EVENT", []string{"TENANT=demo", "EVENT="}, []string{"malformed event: no id given", "] Error 2"}},
		{"a failed call", []string{"TENANT=demo", "EVENT=evt_1", "MOTO_PORT=1", "DYNAMODB_PORT=1"}, []string{"connection refused", "] Error 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("make", append([]string{"-s", "--no-print-directory", "inspect"}, tt.vars...)...)
			cmd.Dir = awstest.ModuleRoot()
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("make inspect %s = %v, want make's exit status 2:\n%s", strings.Join(tt.vars, " "), err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("make inspect %s says\n%s\nwant %q in it", strings.Join(tt.vars, " "), out, w)
				}
			}
		})
	}
}

// TestReadmeExample runs the README's set-up example as written — its
// GitHub curl, twice — against the pipeline `make run` runs, then
// `make inspect TENANT=demo EVENT=4f2c1a60-0001` as the README's reader
// would type it: GitHub's delivery id is not signed, so only the ingest's
// log line pairs it with the event's key.
func TestReadmeExample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole local pipeline and runs make")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	readme, err := os.ReadFile(filepath.Join(awstest.ModuleRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, answers := readmeCurl(t, string(readme))

	moto, ddb := awstest.Moto(t), awstest.DynamoDBLocal(t)
	logFile := filepath.Join(t.TempDir(), "functions.log")
	s, err := devstack.Start(ctx, devstack.Options{
		Name: devstack.DefaultName, TenantsFile: filepath.Join(awstest.ModuleRoot(), "events", "tenants.json"),
		Addr: "127.0.0.1:0", TargetAddr: "127.0.0.1:0", Endpoint: moto, DynamoDBEndpoint: ddb, LogFile: logFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer s.ServeBackground(ctx)()

	script = strings.NewReplacer("127.0.0.1:3000", strings.TrimPrefix(s.URL(), "http://"),
		"127.0.0.1:3001", strings.TrimPrefix(s.TargetURL(), "http://")).Replace(script)
	out, err := exec.CommandContext(ctx, "bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the README's curl: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) < len(answers) || !slices.Equal(got[:len(answers)], answers) {
		t.Fatalf("the README's curl answered\n%s\nwant the README's\n%s", out, strings.Join(answers, "\n"))
	}

	port := func(endpoint string) string { return endpoint[strings.LastIndexByte(endpoint, ':')+1:] }
	var last []byte
	for try := 0; try < 20; try++ {
		if len(s.Target.Applied()) > 0 { // the forward arrived; its message is being deleted
			cmd := exec.CommandContext(ctx, "make", "-s", "inspect", "TENANT=demo", "EVENT=4f2c1a60-0001",
				"MOTO_PORT="+port(moto), "DYNAMODB_PORT="+port(ddb), "LOG_FILE="+logFile)
			cmd.Dir = awstest.ModuleRoot()
			last, err = cmd.CombinedOutput()
			if err == nil && strings.Contains(string(last), "DONE") {
				for _, want := range []string{"demo#github#sha256:", "eventId 4f2c1a60-0001", "accepted 200", "duplicate 200"} {
					if !strings.Contains(string(last), want) {
						t.Errorf("make inspect shows no %q:\n%s", want, last)
					}
				}
				t.Logf("make inspect TENANT=demo EVENT=4f2c1a60-0001:\n%s", last)
				return
			}
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("make inspect TENANT=demo EVENT=4f2c1a60-0001 never showed the event done: %v\n%s", err, last)
}

// readmeCurl returns the README's shell block that sends the GitHub
// delivery, and the answers its comment lines promise.
func readmeCurl(t *testing.T, readme string) (script string, answers []string) {
	t.Helper()
	for _, block := range strings.Split(readme, "```sh\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if !strings.Contains(block, "x-github-delivery: 4f2c1a60-0001") {
			continue
		}
		for _, l := range strings.Split(block, "\n") {
			if a, ok := strings.CutPrefix(l, "# {"); ok {
				answers = append(answers, "{"+a)
			}
		}
		return block, answers
	}
	t.Fatal("README.md has no shell block sending the GitHub delivery 4f2c1a60-0001")
	return "", nil
}

// TestReadmeDeadLetterExample makes the README's dead letter as
// docs/development.md says to, against the pipeline `make run` runs: its
// shell block (a rule on the target, the signed GitHub delivery) as
// written, then its `make inspect TENANT=demo EVENT=4f2c1a60-0002` until
// the event is dead-lettered. Every line of the README's abridged output
// must be a line of the real one (… stands for what it leaves out, a time
// for any time), and the lines an operator reads must say what the README
// says they say. Then the replay block: the target applies the event.
func TestReadmeDeadLetterExample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole local pipeline and runs make")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	root := awstest.ModuleRoot()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	development, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	const inspectLine = "make inspect TENANT=demo EVENT=4f2c1a60-0002"
	script := shellBlock(t, string(development), "x-github-delivery: 4f2c1a60-0002")
	send, inspectCmd, ok := strings.Cut(script, inspectLine)
	if !ok {
		t.Fatalf("docs/development.md's block sending 4f2c1a60-0002 does not run %q:\n%s", inspectLine, script)
	}
	inspectCmd = inspectLine + inspectCmd
	replay := shellBlock(t, string(development), "ACTION=redrive EVENT=4f2c1a60-0002")
	shown := readmeDeadLetter(t, string(readme))

	// A moto of its own, as make run starts: make inspect reads the stack
	// name make run uses, and the queues of that name on the test binary's
	// moto may still be long-polled by the pollers of TestReadmeExample's
	// stopped stack (moto hands a message to a receive its caller gave up,
	// and it stays in flight for the visibility timeout).
	ddb := awstest.DynamoDBLocal(t)
	logFile := filepath.Join(t.TempDir(), "functions.log")
	s, err := devstack.Start(ctx, devstack.Options{
		Name: devstack.DefaultName, TenantsFile: filepath.Join(root, "events", "tenants.json"),
		Addr: "127.0.0.1:0", TargetAddr: "127.0.0.1:0", DynamoDBEndpoint: ddb, LogFile: logFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer s.ServeBackground(ctx)()
	moto := s.Endpoint

	ports := strings.NewReplacer("127.0.0.1:3000", strings.TrimPrefix(s.URL(), "http://"),
		"127.0.0.1:3001", strings.TrimPrefix(s.TargetURL(), "http://"))
	port := func(endpoint string) string { return endpoint[strings.LastIndexByte(endpoint, ':')+1:] }
	bash := func(script string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "bash", "-c", "set -e\n"+ports.Replace(script))
		cmd.Dir = root
		// make inspect and make replay read these as make run's variables.
		cmd.Env = append(os.Environ(), "MOTO_PORT="+port(moto), "DYNAMODB_PORT="+port(ddb), "LOG_FILE="+logFile)
		return cmd.CombinedOutput()
	}

	out, err := bash(send)
	if err != nil {
		t.Fatalf("docs/development.md's block: %v\n%s", err, out)
	}
	if got, want := strings.Split(strings.TrimSpace(string(out)), "\n"), answers(send); !slices.Equal(got, want) {
		t.Fatalf("docs/development.md's block answered\n%s\nwant its comments'\n%s", out, strings.Join(want, "\n"))
	}

	var last []byte
	for try := 0; ; try++ {
		last, err = bash(inspectCmd)
		if err == nil && strings.Contains(string(last), "DEAD_LETTERED") {
			break
		}
		if try == 60 {
			t.Fatalf("%s never showed the event dead-lettered: %v\n%s", inspectLine, err, last)
		}
		time.Sleep(time.Second)
	}
	t.Logf("%s:\n%s", inspectLine, last)
	real := strings.Split(strings.TrimSpace(string(last)), "\n")
	for _, l := range shown {
		if !slices.ContainsFunc(real, abridged(l).MatchString) {
			t.Errorf("the README shows a line make inspect does not print:\n%s", l)
		}
	}
	for _, want := range []struct{ label, text string }{
		{"state", "DEAD_LETTERED"},
		{"state", "answered 400 Bad Request"},
		{"dead letter", "conversation octo/dead#1"},
		{"dead letter", "reason: effect forward: target rejected the event: answered 400 Bad Request"},
		{"notes", "make replay TENANT=demo CONVERSATION='octo/dead#1' ACTION=redrive"},
	} {
		if !slices.ContainsFunc(shown, func(l string) bool { return strings.HasPrefix(l, want.label+" ") && strings.Contains(l, want.text) }) {
			t.Errorf("the README's example shows no %s line with %q", want.label, want.text)
		}
		if !slices.ContainsFunc(real, func(l string) bool { return strings.HasPrefix(l, want.label+" ") && strings.Contains(l, want.text) }) {
			t.Errorf("make inspect shows no %s line with %q", want.label, want.text)
		}
	}

	if out, err := bash(replay); err != nil {
		t.Fatalf("docs/development.md's replay block: %v\n%s", err, out)
	}
	for !slices.ContainsFunc(s.Target.Applied(), func(a devstack.Applied) bool { return a.EventID == "4f2c1a60-0002" }) {
		if ctx.Err() != nil {
			t.Fatalf("the replayed event never reached the target: %v", ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// shellBlock returns doc's first shell block containing marker.
func shellBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	for _, block := range strings.Split(doc, "```sh\n")[1:] {
		if block, _, _ = strings.Cut(block, "```"); strings.Contains(block, marker) {
			return block
		}
	}
	t.Fatalf("no shell block with %q", marker)
	return ""
}

// answers returns the answers a shell block's comment lines promise.
func answers(block string) []string {
	var out []string
	for _, l := range strings.Split(block, "\n") {
		if a, ok := strings.CutPrefix(l, "# {"); ok {
			out = append(out, "{"+a)
		}
	}
	return out
}

// readmeDeadLetter returns the lines of the README's make inspect output
// for 4f2c1a60-0002.
func readmeDeadLetter(t *testing.T, readme string) []string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "`make inspect TENANT=demo EVENT=4f2c1a60-0002`")
	if _, block, found := strings.Cut(after, "```text\n"); ok && found {
		block, _, _ = strings.Cut(block, "```")
		return strings.Split(strings.TrimSpace(block), "\n")
	}
	t.Fatal("README.md shows no output of make inspect TENANT=demo EVENT=4f2c1a60-0002")
	return nil
}

// abridged matches the lines an abridged line stands for: "…" any text, a
// time any time, a run of spaces any run.
func abridged(line string) *regexp.Regexp {
	var b strings.Builder
	for i, part := range strings.Split(line, "…") {
		if i > 0 {
			b.WriteString(".*")
		}
		part = regexp.QuoteMeta(part)
		part = isoTime.ReplaceAllString(part, `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
		b.WriteString(spaces.ReplaceAllString(part, ` +`))
	}
	return regexp.MustCompile("^" + b.String() + "$")
}

var (
	isoTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	spaces  = regexp.MustCompile(` +`)
)
