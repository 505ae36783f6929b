package bootstrap

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRoot is a module root with functions a and b.
func fakeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(root, "functions", n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "functions", n, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestForHostTakesTheBuiltOnes(t *testing.T) {
	root, dir := fakeRoot(t), t.TempDir()
	t.Setenv(EnvDir, dir)
	if _, err := ForHost(context.Background(), root, t.TempDir()); err == nil || !strings.Contains(err.Error(), EnvDir) {
		t.Fatalf("ForHost with %s lacking the bootstraps = %v, want an error naming %s", EnvDir, err, EnvDir)
	}
	for _, n := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n, "bootstrap"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bins, err := ForHost(context.Background(), root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if want := filepath.Join(dir, n, "bootstrap"); bins[n] != want {
			t.Errorf("ForHost()[%q] = %q, want %q", n, bins[n], want)
		}
	}
}

// TestBuild builds two tiny functions with one go build, each into its
// <name>/bootstrap.
func TestBuild(t *testing.T) {
	root, dir := fakeRoot(t), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/fake\n\ngo 1.22\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOFLAGS", "-mod=mod")
	bins, err := Build(context.Background(), root, dir, "linux", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		fi, err := os.Stat(filepath.Join(dir, n, "bootstrap"))
		if err != nil || bins[n] != filepath.Join(dir, n, "bootstrap") || fi.Size() == 0 {
			t.Errorf("Build()[%q] = %q (%v), want a binary at %s", n, bins[n], err, filepath.Join(dir, n, "bootstrap"))
		}
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".build-*")); len(leftovers) != 0 {
		t.Errorf("Build left %v behind", leftovers)
	}
}
