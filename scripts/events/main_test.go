package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	const root = "../.."
	tenants, samples := filepath.Join(root, "events", "tenants.json"), filepath.Join(root, "events", "samples")
	tests := []struct {
		name, tenants, tenant, samples string
		wantErr                        string
	}{
		{"demo", tenants, "demo", samples, ""},
		{"unknown tenant", tenants, "nope", samples, `no tenant "nope"`},
		{"tenant without the providers", tenants, "acme", samples, "not enabled"},
		{"missing tenants file", filepath.Join(root, "missing.json"), "demo", samples, "read tenants file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			err := run(tt.tenants, tt.tenant, tt.samples, out, filepath.Join(t.TempDir(), "worker"))
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
			if len(files) == 0 || len(files) != len(reqs) {
				t.Errorf("run() wrote %d files for %d samples", len(files), len(reqs))
			}
			if _, err := os.Stat(filepath.Join(out, "github-issues-opened.json")); err != nil {
				t.Errorf("run() wrote no github-issues-opened.json: %v", err)
			}
		})
	}
}
