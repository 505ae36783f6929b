package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

// deadLettered provisions the local stack name on moto and DynamoDB Local
// as make run does, dead-letters one event of the tenant demo's
// conversation A as the worker does, and records the event
// demo#stripe#evt_done done: its claim completed, its forward run.
func deadLettered(t *testing.T, moto, ddb, name string) {
	t.Helper()
	ctx := context.Background()
	cfg, err := emulator.AWSConfig(ctx, moto, ddb)
	if err != nil {
		t.Fatal(err)
	}
	tenants, err := tenant.LoadFile(filepath.Join(awstest.ModuleRoot(), "events", "tenants.json"), provider.Registry())
	if err != nil {
		t.Fatal(err)
	}
	d, err := devstack.Provision(ctx, cfg, name, tenants, devstack.DefaultQueue)
	if err != nil {
		t.Fatal(err)
	}
	e := &envelope.Envelope{Version: envelope.Version, Key: "demo#github#sha256:ab12", Tenant: "demo", Provider: "github",
		EventID: "4f2c1a60-0001", Type: "issues.opened", Conversation: "A", ReceivedAt: time.Now().UTC()}
	e.SetBody([]byte(`{"action":"opened"}`))
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	_, err = queue.NewSQS(sqs.NewFromConfig(cfg)).Send(ctx, d.Queues["demo"].DLQURL, queue.Message{GroupID: "A", DeduplicationID: "dlq-1", Body: b,
		Attributes: map[string]string{worker.AttrReason: "target rejected the event: answered 400", worker.AttrGroupID: "A", worker.AttrEventKey: e.Key}})
	if err != nil {
		t.Fatal(err)
	}

	const done = "demo#stripe#evt_done"
	stores := devstack.Stores(name)
	claims := idempotency.NewDynamoDB(dynamodb.NewFromConfig(cfg), stores.IdempotencyTable, idempotency.Options{})
	for _, key := range []string{e.Key, done} { // verified and queued
		if err := claims.Complete(ctx, key, "digest"); err != nil {
			t.Fatal(err)
		}
	}
	f, err := ledger.NewFence("demo", "B", "1", 1, false)
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.NewDynamoDB(dynamodb.NewFromConfig(cfg), stores.LedgerTable, ledger.Options{})
	fwd := ledger.Key{Tenant: "demo", Event: done, Effect: worker.ForwardEffect}
	if _, err := l.Claim(ctx, f, fwd, time.Second); err != nil {
		if _, rerr := l.Record(ctx, fwd); rerr != nil { // not an earlier test's
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Millisecond) // SentTimestamp is in milliseconds: the redrive starts after it
}

// TestRun runs the command on the emulators the way make replay does:
// exit status and output for a listing, a dry run by each kind of id,
// bad usage, malformed input refused as inspect refuses it, a selection of
// nothing with why, an unknown or malformed tenant and an unreachable
// endpoint.
func TestRun(t *testing.T) {
	ctx := context.Background()
	moto, ddb := awstest.Moto(t), awstest.DynamoDBLocal(t)
	name := awstest.Name(t)
	name = "rr" + name[len(name)-9:]
	deadLettered(t, moto, ddb, name)
	local := []string{"-local", "-name", name, "-endpoint", moto, "-dynamodb-endpoint", ddb, "-log-file", filepath.Join(t.TempDir(), "none.log")}
	tests := []struct {
		name      string
		args      []string
		code      int
		out, errs string
	}{
		{"list", []string{"-tenant", "demo", "list"}, 0, "1 message(s): 1 listed", ""},
		{"dry run by the sender's id", []string{"-tenant", "demo", "-event", "4f2c1a60-0001", "-dry-run", "redrive"}, 0, "1 would_move — dry run, nothing moved", ""},
		{"dry run by the forward's webhook-id, as inspect resolves it", []string{"-tenant", "demo", "-event", forward.MessageID("demo#github#sha256:ab12"), "-dry-run", "redrive"},
			0, "1 would_move — dry run, nothing moved", ""},
		{"list by key", []string{"-tenant", "demo", "-event", "demo#github#sha256:ab12", "list"}, 0, "1 listed", ""},
		{"an event with no trace", []string{"-tenant", "demo", "-event", "demo#github#sha256:ffff", "-dry-run", "redrive"}, 3, "1 held (does not match the filter)",
			"replay: no dead letter selected: event demo#github#sha256:ffff: no such event (no trace of the event"},
		{"an unknown sender's id", []string{"-tenant", "demo", "-event", "evt_never", "list"}, 3, "0 message(s)", "event evt_never: no such event"},
		{"an event done", []string{"-tenant", "demo", "-event", "evt_done", "-dry-run", "redrive"}, 3, "1 held (does not match the filter)",
			"event demo#stripe#evt_done: not dead-lettered: DONE (every effect recorded is done)"},
		{"a conversation with no dead letter", []string{"-tenant", "demo", "-conversation", "B", "list"}, 3, "0 message(s)",
			"no dead letter selected: none of the 1 dead letters seen matches -conversation B"},
		{"no command", []string{"-tenant", "demo"}, 2, "", "one command is required"},
		{"unknown command", []string{"-tenant", "demo", "move"}, 2, "", "replay: unknown command move (list or redrive)"},
		{"two commands", []string{"-tenant", "demo", "list", "redrive"}, 2, "", "one command only, after the flags: got list redrive"},
		{"an empty -event", []string{"-tenant", "demo", "-event", "", "redrive"}, 2, "", "-event is empty: give a value, or leave the flag out to select every event"},
		{"an empty -event=", []string{"-tenant", "demo", "-event=", "redrive"}, 2, "", "-event is empty"},
		{"an empty -conversation", []string{"-tenant", "demo", "-conversation", "", "redrive"}, 2, "", "-conversation is empty"},
		{"an empty -type", []string{"-tenant", "demo", "-type", "", "list"}, 2, "", "-type is empty"},
		{"an event key of another tenant", []string{"-tenant", "demo", "-event", "acme#stripe#evt_1", "redrive"}, 2, "",
			`malformed event key "acme#stripe#evt_1" ({tenant}#{provider}#{eventId}): its tenant is acme, not demo`},
		{"an event key of another tenant, refused before any call", []string{"-tenant", "demo", "-endpoint", "http://127.0.0.1:1", "-event", "acme#stripe#evt_1", "redrive"}, 2, "",
			"its tenant is acme, not demo"},
		{"an event key of no provider", []string{"-tenant", "demo", "-event", "demo#paypal#evt_1", "redrive"}, 2, "", `"paypal" is not a provider`},
		{"an event key with an empty id", []string{"-tenant", "demo", "-event", "demo#stripe#", "redrive"}, 2, "", "the event id after the second '#' is empty"},
		{"-event without -tenant", []string{"-queue-url", "http://127.0.0.1:1/q.fifo", "-event", "evt_1", "list"}, 2, "", "-event needs -tenant"},
		{"no tenant", []string{"list"}, 2, "", "-tenant is required"},
		{"malformed tenant", []string{"-tenant", "Demo_1", "list"}, 2, "", `malformed tenant id "Demo_1"`},
		{"tenant too long", []string{"-tenant", strings.Repeat("a", 41), "list"}, 2, "", "malformed tenant id"},
		{"unknown tenant", []string{"-tenant", "nobody", "list"}, 2, "", "no queue for the tenant"},
		{"unknown flag", []string{"-tenant", "demo", "-nope", "list"}, 2, "", "flag provided but not defined"},
		{"emulator down", []string{"-tenant", "demo", "-endpoint", "http://127.0.0.1:1", "list"}, 1, "", "is `make run` running?"},
		{"redrive", []string{"-tenant", "demo", "redrive"}, 0, "1 message(s): 1 moved", ""},
		{"nothing left", []string{"-tenant", "demo", "redrive"}, 3, "0 message(s)", "no dead letter selected: the DLQ holds no dead letter this run could see"},
		{"the moved event, queued", []string{"-tenant", "demo", "-event", "demo#github#sha256:ab12", "redrive"}, 3, "0 message(s)",
			"event demo#github#sha256:ab12: not dead-lettered: QUEUED"},
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
	client := sqs.NewFromConfig(awstest.Config(t, moto))
	pair, err := provision.QueuePair(ctx, client, devstack.QueueName(name, tenantID), provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: 5})
	if err != nil {
		t.Fatal(err)
	}
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
	moto := awstest.Moto(t)
	name := awstest.Name(t)
	name = "rd" + name[len(name)-9:]
	local := []string{"-local", "-name", name, "-endpoint", moto}
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
		{"billing's, none left", []string{"-tenant", "demo", "-destination", "billing", "list"}, 3, nil, []string{"none of the 2 dead letters seen matches -destination billing"}},
		{"empty destination", []string{"-tenant", "demo", "-destination", "", "list"}, 2, nil, []string{"-destination is empty"}},
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
// make exits 2 whenever a recipe fails; its "Error N" line is the
// command's own status, which make replay builds the command to keep (go
// run exits 1 for any failure).
func TestMakeReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make and builds the command")
	}
	moto, ddb := awstest.Moto(t), awstest.DynamoDBLocal(t)
	deadLettered(t, moto, ddb, devstack.DefaultName)
	port := func(endpoint string) string { return endpoint[strings.LastIndexByte(endpoint, ':')+1:] }
	vars := []string{"MOTO_PORT=" + port(moto), "DYNAMODB_PORT=" + port(ddb), "LOG_FILE=" + filepath.Join(t.TempDir(), "none.log")}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "AWS_"):
		case slices.Contains([]string{"MOTO_PORT", "DYNAMODB_PORT", "LOG_FILE", "STACK_NAME", "EVENT", "CONVERSATION", "TYPE", "ACTION"}, name):
		default:
			env = append(env, kv)
		}
	}
	for _, tt := range []struct {
		args []string
		want []string // "Error N": make failed, the command's status N
	}{
		{[]string{"TENANT=demo"}, []string{"1 listed"}},
		{[]string{"TENANT=demo", "ACTION=redrive", "DRY_RUN=1", "EVENT=4f2c1a60-0001"}, []string{"1 would_move — dry run, nothing moved"}},
		{[]string{"TENANT=demo", "ACTION=redrive", "EVENT="}, []string{"-event is empty", "] Error 2"}},
		{[]string{"TENANT=demo", "ACTION=redrive", "CONVERSATION="}, []string{"-conversation is empty", "] Error 2"}},
		{[]string{"TENANT=demo", "TYPE="}, []string{"-type is empty", "] Error 2"}},
		{[]string{"TENANT=demo", "DESTINATION="}, []string{"-destination is empty", "] Error 2"}},
		{[]string{"TENANT=demo", "DESTINATION=billing"}, []string{`unknown destination "billing": tenant demo has no destinations (a targetUrl)`, "] Error 2"}},
		{[]string{"TENANT=demo", "ACTION=bogus"}, []string{"replay: unknown command bogus (list or redrive)", "] Error 2"}},
		{[]string{"TENANT=demo", "EVENT=acme#stripe#evt_1"}, []string{"its tenant is acme, not demo", "] Error 2"}},
		{[]string{"TENANT=demo", "ACTION=redrive", "EVENT=evt_done"}, []string{"not dead-lettered: DONE", "] Error 3"}},
		{[]string{"TENANT=demo", "ACTION=redrive", "CONVERSATION=A"}, []string{"1 moved"}},
		{[]string{"TENANT=nobody"}, []string{"no queue for the tenant", "] Error 2"}},
		{[]string{"TENANT=demo", "MOTO_PORT=1"}, []string{"connection refused", "] Error 1"}},
		{nil, []string{"usage: make replay TENANT=demo", "] Error 2"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := exec.Command("make", append(append([]string{"-s", "--no-print-directory", "replay"}, vars...), tt.args...)...)
			cmd.Dir, cmd.Env = awstest.ModuleRoot(), env
			out, _ := cmd.CombinedOutput()
			code := 0
			if strings.Contains(tt.want[len(tt.want)-1], "] Error ") {
				code = 2
			}
			if cmd.ProcessState.ExitCode() != code {
				t.Errorf("make replay %s = %d, want %d:\n%s", strings.Join(tt.args, " "), cmd.ProcessState.ExitCode(), code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("make replay %s says\n%s\nwant %q in it", strings.Join(tt.args, " "), out, w)
				}
			}
		})
	}
}
