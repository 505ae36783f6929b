package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

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
		{"unknown event", []string{"-tenant", "demo", "evt_never"}, 1, "", "no trace of the event"},
		{"unknown tenant", []string{"-tenant", "nobody", "-summary"}, 1, "", "no queue for the tenant"},
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
