package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/provision"
)

// TestRun runs the command on moto and DynamoDB Local the way make pause
// and make resume do: exit status and output for a pause, a second pause,
// a status, a resume, a second resume, and every kind of bad input.
func TestRun(t *testing.T) {
	ctx := context.Background()
	moto, ddb := awstest.Moto(t), awstest.DynamoDBLocal(t)
	name := awstest.Name(t)
	name = "dd" + name[len(name)-9:]
	d := devstack.Stores(name)
	if err := provision.Ledger(ctx, dynamodb.NewFromConfig(awstest.Config(t, ddb)), d.LedgerTable); err != nil {
		t.Fatal(err)
	}
	params := ssm.NewFromConfig(awstest.Config(t, moto))
	for id, out := range map[string]string{
		"demo":   `{"destinations":[{"name":"billing","url":"https://billing.example/hooks","secrets":["whsec_c2VjcmV0"]},{"name":"crm","url":"https://crm.example/hooks","secrets":["whsec_c2VjcmV0"]}]}`,
		"legacy": `{"targetUrl":"https://target.example/hooks","secrets":["whsec_c2VjcmV0"]}`,
	} {
		if _, err := params.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(d.ParameterPrefix + "/tenants/" + id + "/outbound"),
			Value: aws.String(out), Type: ssmtypes.ParameterTypeSecureString}); err != nil {
			t.Fatal(err)
		}
	}
	local := []string{"-local", "-name", name, "-endpoint", moto, "-dynamodb-endpoint", ddb}
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	clock := t0
	tests := []struct {
		name      string
		after     time.Duration
		args      []string
		code      int
		out, errs []string
	}{
		{"pause", 0, []string{"pause", "demo", "billing", "-reason", "maintenance until 14:00"}, 0,
			[]string{"paused demo/billing: paused since 2026-12-06T09:00:00Z", "by operator: maintenance until 14:00", "until it is resumed"}, nil},
		{"pause again, flags first", time.Minute, []string{"--reason", "other", "pause", "demo", "billing"}, 0,
			[]string{"demo/billing was already paused, left as it is", "(1m0s ago) by operator: maintenance until 14:00"}, nil},
		{"status", time.Minute, []string{"status", "demo"}, 0,
			[]string{"demo/billing: paused since 2026-12-06T09:00:00Z (2m0s ago) by operator: maintenance until 14:00", "demo/crm: delivering"}, nil},
		{"resume", time.Hour, []string{"resume", "demo", "billing"}, 0,
			[]string{"resumed demo/billing, which was paused since 2026-12-06T09:00:00Z (1h2m0s ago)", "come back within 6m22s"}, nil},
		{"resume again", time.Minute, []string{"resume", "demo", "billing"}, 0, []string{"demo/billing is not paused"}, nil},
		{"unknown tenant", 0, []string{"pause", "nobody", "billing", "-reason", "x"}, 2, nil, []string{"unknown tenant nobody"}},
		{"unknown destination", 0, []string{"pause", "demo", "billling", "-reason", "x"}, 2, nil, []string{`unknown destination "billling": tenant demo has destinations billing, crm`}},
		{"a targetUrl", 0, []string{"resume", "legacy", "billing"}, 2, nil, []string{"tenant legacy forwards to a targetUrl"}},
		{"no reason", 0, []string{"pause", "demo", "billing"}, 2, nil, []string{"a reason is required"}},
		{"a reason on resume", 0, []string{"resume", "demo", "billing", "-reason", "x"}, 2, nil, []string{"-reason is for pause only"}},
		{"malformed tenant", 0, []string{"pause", "Demo!", "billing", "-reason", "x"}, 2, nil, []string{"invalid tenant id"}},
		{"malformed destination", 0, []string{"resume", "demo", "Billing"}, 2, nil, []string{`destination name "Billing"`}},
		{"missing destination", 0, []string{"resume", "demo"}, 2, nil, []string{"usage: destination"}},
		{"unknown verb", 0, []string{"disable", "demo", "billing"}, 2, nil, []string{"usage: destination"}},
		{"unreachable endpoint", 0, []string{"-endpoint", "http://127.0.0.1:1", "-dynamodb-endpoint", "http://127.0.0.1:1", "status", "demo"}, 1, nil, []string{"destination:"}},
	}
	for _, tt := range tests {
		clock = clock.Add(tt.after)
		var stdout, stderr bytes.Buffer
		code := run(ctx, append(append([]string{}, local...), tt.args...), &stdout, &stderr, func() time.Time { return clock })
		if code != tt.code {
			t.Errorf("%s: destination %v = %d, want %d\nstdout: %s\nstderr: %s", tt.name, tt.args, code, tt.code, &stdout, &stderr)
		}
		for _, w := range tt.out {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%s: stdout %q, want it to contain %q", tt.name, &stdout, w)
			}
		}
		for _, w := range tt.errs {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: stderr %q, want it to contain %q", tt.name, &stderr, w)
			}
		}
	}
	// What the worker reads: billing resumed, nothing left paused.
	states, err := destination.NewDynamoDB(dynamodb.NewFromConfig(awstest.Config(t, ddb)), d.LedgerTable).States(ctx, "demo")
	if err != nil || states["billing"].IsPaused() {
		t.Errorf("States(demo) = %+v, %v; want billing not paused", states, err)
	}
}
