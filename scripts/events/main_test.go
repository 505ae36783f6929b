package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	const root = "../.."
	tenants, samples := filepath.Join(root, "events", "tenants.json"), filepath.Join(root, "events", "samples")
	tests := []struct {
		name, tenants, tenant, samples string
		timeless                       bool
		wantErr                        string
	}{
		{"demo", tenants, "demo", samples, false, ""},
		{"committed", tenants, "demo", samples, true, ""},
		{"unknown tenant", tenants, "nope", samples, false, `no tenant "nope"`},
		{"tenant without the providers", tenants, "acme", samples, false, "not enabled"},
		{"missing tenants file", filepath.Join(root, "missing.json"), "demo", samples, false, "read tenants file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			err := run(tt.tenants, tt.tenant, tt.samples, out, filepath.Join(t.TempDir(), "worker"), tt.timeless, time.Now())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("run() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("run() = %v", err)
			}
			reqs, _ := filepath.Glob(filepath.Join(samples, "*", "*.request.json"))
			files, _ := filepath.Glob(filepath.Join(out, "*.json"))
			switch {
			case !tt.timeless && len(files) != len(reqs):
				t.Errorf("run() wrote %d files for %d samples", len(files), len(reqs))
			case tt.timeless && (len(files) == 0 || len(files) >= len(reqs)):
				t.Errorf("run(timeless) wrote %d files for %d samples, want only the timeless ones", len(files), len(reqs))
			}
			if _, err := os.Stat(filepath.Join(out, "stripe-customer-created.json")); (err == nil) == tt.timeless {
				t.Errorf("stripe event (signed timestamp) written = %v, want %v", err == nil, !tt.timeless)
			}
			if _, err := os.Stat(filepath.Join(out, "github-issues-opened.json")); err != nil {
				t.Errorf("run() wrote no github-issues-opened.json: %v", err)
			}
		})
	}
}

// TestMakeEventsWritesNoTrackedFile: `make events` writes under events/local,
// which git ignores, so it never dirties the tree.
func TestMakeEventsWritesNoTrackedFile(t *testing.T) {
	for _, f := range []string{"events/local/ingest/stripe-customer-created.json", "events/local/worker/sqs-batch.json"} {
		cmd := exec.Command("git", "check-ignore", "-q", f)
		cmd.Dir = "../.."
		if err := cmd.Run(); err != nil {
			t.Errorf("git check-ignore %s = %v, want ignored", f, err)
		}
	}
}
