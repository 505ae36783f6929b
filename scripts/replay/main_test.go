package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/worker"
)

// queues provisions tenantID's queues of the local stack name on moto.
func queues(t *testing.T, moto, name, tenantID string) (*sqs.Client, provision.Pair) {
	t.Helper()
	client := sqs.NewFromConfig(awstest.Config(t, moto))
	pair, err := provision.QueuePair(context.Background(), client, devstack.QueueName(name, tenantID), provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	return client, pair
}

// localStack is moto and a local stack name of its own for test t, and the
// flags that point the command at them.
func localStack(t *testing.T, prefix string) (moto, name string, local []string) {
	moto = awstest.Moto(t)
	name = awstest.Name(t)
	name = prefix + name[len(name)-9:]
	return moto, name, []string{"-local", "-name", name, "-endpoint", moto}
}

// deadLettered provisions the tenant demo's queues of the local stack name
// on moto and dead-letters one event of conversation A, as the worker does.
func deadLettered(t *testing.T, moto, name string) {
	t.Helper()
	ctx := context.Background()
	client, pair := queues(t, moto, name, "demo")
	e := &envelope.Envelope{Version: envelope.Version, Key: "demo#github#sha256:ab12", Tenant: "demo", Provider: "github",
		EventID: "4f2c1a60-0001", Type: "issues.opened", Conversation: "A", ReceivedAt: time.Now().UTC()}
	e.SetBody([]byte(`{"action":"opened"}`))
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	_, err = queue.NewSQS(client).Send(ctx, pair.DLQURL, queue.Message{GroupID: "A", DeduplicationID: "dlq-1", Body: b,
		Attributes: map[string]string{worker.AttrReason: "target rejected the event: answered 400", worker.AttrGroupID: "A", worker.AttrEventKey: e.Key}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // SentTimestamp is in milliseconds: the redrive starts after it
}

// TestRun runs the command on moto the way make replay does: exit status
// and output for a listing, a dry run, a redrive, bad usage, an unknown or
// malformed tenant and an unreachable endpoint.
func TestRun(t *testing.T) {
	ctx := context.Background()
	moto, name, local := localStack(t, "rr")
	deadLettered(t, moto, name)
	tests := []struct {
		name      string
		args      []string
		code      int
		out, errs string
	}{
		{"list", []string{"-tenant", "demo", "list"}, 0, "1 message(s): 1 listed", ""},
		{"dry run by the sender's id", []string{"-tenant", "demo", "-event", "4f2c1a60-0001", "-dry-run", "redrive"}, 0, "1 would_move — dry run, nothing moved", ""},
		{"dry run by key, another event", []string{"-tenant", "demo", "-event", "demo#github#sha256:ffff", "-dry-run", "redrive"}, 0, "1 held (does not match the filter)", ""},
		{"no command", []string{"-tenant", "demo"}, 2, "", "one command is required"},
		{"unknown command", []string{"-tenant", "demo", "move"}, 2, "", "one command is required"},
		{"no tenant", []string{"list"}, 2, "", "-tenant is required"},
		{"malformed tenant", []string{"-tenant", "Demo_1", "list"}, 2, "", "invalid tenant id"},
		{"tenant too long", []string{"-tenant", strings.Repeat("a", 41), "list"}, 2, "", "invalid tenant id"},
		{"unknown tenant", []string{"-tenant", "nobody", "list"}, 2, "", "no queue for the tenant"},
		{"unknown flag", []string{"-tenant", "demo", "-nope", "list"}, 2, "", "flag provided but not defined"},
		{"emulator down", []string{"-tenant", "demo", "-endpoint", "http://127.0.0.1:1", "list"}, 1, "", "is `make run` running?"},
		{"redrive", []string{"-tenant", "demo", "redrive"}, 0, "1 message(s): 1 moved", ""},
		{"nothing left", []string{"-tenant", "demo", "redrive"}, 0, "0 message(s)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			code := run(ctx, append(append([]string{}, local...), tt.args...), &out, &errs)
			if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errs.String(), tt.errs) {
				t.Errorf("replay %s = %d\nstdout: %s\nstderr: %s\nwant %d, stdout with %q, stderr with %q", strings.Join(tt.args, " "), code, out.String(), errs.String(), tt.code, tt.out, tt.errs)
			}
		})
	}
}

// streamLetters provisions tenant's queues of the local stack name on moto,
// its routes parameter when routes is not empty, and dead-letters one
// event at two destinations, billing and ci, and one event without a
// stream, as the worker does.
func streamLetters(t *testing.T, moto, name, tenantID, routes string) {
	t.Helper()
	ctx := context.Background()
	client, pair := queues(t, moto, name, tenantID)
	if routes != "" {
		_, err := ssm.NewFromConfig(awstest.Config(t, moto)).PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/" + name + "/tenants/" + tenantID + "/routes"),
			Value: aws.String(routes), Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range []struct{ group, stream, key string }{
		{"A|billing", "forward:billing", "e1"}, {"A|ci", "forward:ci", "e1"}, {"B", "", "e2"},
	} {
		attrs := map[string]string{worker.AttrReason: "destination answered 400", worker.AttrGroupID: m.group, worker.AttrEventKey: tenantID + "#github#" + m.key}
		if m.stream != "" {
			attrs[queue.AttrStream] = m.stream
		}
		_, err := queue.NewSQS(client).Send(ctx, pair.DLQURL, queue.Message{GroupID: m.group, DeduplicationID: "dlq-" + strconv.Itoa(i), Body: []byte("{}"), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Millisecond) // SentTimestamp is in milliseconds: the redrive starts after it
}

// TestRunDestination runs -destination on moto: a destination's listing
// and redrive take its stream only, and a name the tenant's routes do not
// hold is bad usage (exit 2), as is -destination for a tenant without
// routes or without -tenant.
func TestRunDestination(t *testing.T) {
	ctx := context.Background()
	moto, name, local := localStack(t, "rd")
	streamLetters(t, moto, name, "demo", `{"streams":[{"name":"billing"},{"name":"ci","filter":{"events":["github:push"]}}]}`)
	streamLetters(t, moto, name, "legacy", "")
	tests := []struct {
		name      string
		args      []string
		code      int
		out, errs []string
	}{
		{"every stream", []string{"-tenant", "demo", "list"}, 0,
			[]string{"3 message(s): 3 listed", "DESTINATION", "listed  billing ", "listed  ci ", "listed  " + replay.LabelEvery}, nil},
		{"billing's", []string{"-tenant", "demo", "-destination", "billing", "list"}, 0, []string{"1 message(s): 1 listed", "listed  billing "}, nil},
		{"unknown destination", []string{"-tenant", "demo", "-destination", "biling", "list"}, 2, nil,
			[]string{`unknown destination "biling": tenant demo's destinations are billing, ci`}},
		{"unknown destination, redrive", []string{"-tenant", "demo", "-destination", "audit", "redrive"}, 2, nil, []string{`unknown destination "audit"`}},
		{"a tenant without routes", []string{"-tenant", "legacy", "-destination", "billing", "list"}, 2, nil,
			[]string{`unknown destination "billing": tenant legacy has no routes parameter`}},
		{"no tenant", []string{"-queue-url", "http://127.0.0.1:1/q.fifo", "-destination", "billing", "list"}, 2, nil, []string{"-destination needs -tenant"}},
		{"billing's redrive", []string{"-tenant", "demo", "-destination", "billing", "redrive"}, 0,
			[]string{"3 message(s): 1 moved, 2 held (" + replay.NoteStream + ")"}, nil},
		{"what is left", []string{"-tenant", "demo", "list"}, 0, []string{"2 message(s): 2 listed", "listed  ci ", "listed  " + replay.LabelEvery}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			code := run(ctx, append(append([]string{}, local...), tt.args...), &out, &errs)
			ok := code == tt.code
			for _, w := range tt.out {
				ok = ok && strings.Contains(out.String(), w)
			}
			for _, w := range tt.errs {
				ok = ok && strings.Contains(errs.String(), w)
			}
			if !ok {
				t.Errorf("replay %s = %d\nstdout: %s\nstderr: %s\nwant %d, stdout with %q, stderr with %q", strings.Join(tt.args, " "), code, out.String(), errs.String(), tt.code, tt.out, tt.errs)
			}
		})
	}
}

// TestMakeReplay runs make replay as a reader of the docs types it, against
// the stack make run provisions, with no AWS variable in the environment.
func TestMakeReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make and go run")
	}
	moto := awstest.Moto(t)
	deadLettered(t, moto, devstack.DefaultName)
	port := moto[strings.LastIndexByte(moto, ':')+1:]
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "MOTO_PORT=") && !strings.HasPrefix(kv, "STACK_NAME=") {
			env = append(env, kv)
		}
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"TENANT=demo"}, 0, "1 listed"},
		{[]string{"TENANT=demo", "ACTION=redrive", "DRY_RUN=1", "EVENT=4f2c1a60-0001"}, 0, "1 would_move — dry run, nothing moved"},
		{[]string{"TENANT=demo", "ACTION=redrive", "CONVERSATION=A"}, 0, "1 moved"},
		{[]string{"TENANT=nobody"}, 2, "no queue for the tenant"},
		{nil, 2, "usage: make replay TENANT=demo"},
	} {
		cmd := exec.Command("make", append([]string{"-s", "replay", "MOTO_PORT=" + port}, tt.args...)...)
		cmd.Dir, cmd.Env = awstest.ModuleRoot(), env
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != tt.code || !strings.Contains(string(out), tt.want) {
			t.Errorf("make replay %s = %d\n%s\nwant %d and %q", strings.Join(tt.args, " "), cmd.ProcessState.ExitCode(), out, tt.code, tt.want)
		}
	}
}
