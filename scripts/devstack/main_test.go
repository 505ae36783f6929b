package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

// TestMakeRunInstallsOnlyWhatItRuns reads the commands make would run
// (make -n): make run installs DynamoDB Local, which it starts, and not the
// npm libraries of scripts/verifiers and scripts/senders, which only the
// tests use (installing them made a fresh clone's make run wait minutes
// before it served); make test still installs both.
func TestMakeRunInstallsOnlyWhatItRuns(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	tests := []struct {
		target    string
		want, not []string
	}{
		{"run", []string{"scripts/install-dynamodb-local.sh", "bin/devstack"}, []string{"scripts/install-verifiers.sh"}},
		{"test", []string{"scripts/install-dynamodb-local.sh", "scripts/install-verifiers.sh"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			cmd := exec.Command("make", "-n", tt.target)
			cmd.Dir = awstest.ModuleRoot()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make -n %s: %v\n%s", tt.target, err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("make -n %s runs no %s:\n%s", tt.target, w, out)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(string(out), n) {
					t.Errorf("make -n %s runs %s, which make %s does not need:\n%s", tt.target, n, tt.target, out)
				}
			}
		})
	}
}
