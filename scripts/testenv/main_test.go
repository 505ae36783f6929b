package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/render"
)

// TestDynamoDBLocalReachesTheCommand: under make test, the tests see the
// DynamoDB Local testenv started, and it answers (awstest would otherwise
// start one per test binary, unseen but slower). Run on its own, it runs a
// command under testenv and expects its exit status back, after the command
// found the endpoint.
func TestDynamoDBLocalReachesTheCommand(t *testing.T) {
	if endpoint := os.Getenv("HOOKPACK_DYNAMODB_LOCAL_ENDPOINT"); endpoint != "" {
		resp, err := http.Get(endpoint + "/")
		if err != nil {
			t.Fatalf("DynamoDB Local at %q: %v", endpoint, err)
		}
		resp.Body.Close()
		return
	}
	dir := dynamoDBLocalDir(t)
	check := `test -n "$HOOKPACK_DYNAMODB_LOCAL_ENDPOINT" && exit 3`
	if got := run(dir, []string{"sh", "-c", check}); got != 3 {
		t.Errorf("run(sh -c %q) = %d, want 3: the endpoint did not reach the command, or its status was lost", check, got)
	}
}

// TestRenderCacheReachesTheCommand: the tests of one run share their
// template renders (package render) through a directory testenv makes.
func TestRenderCacheReachesTheCommand(t *testing.T) {
	if dir := os.Getenv(render.CacheEnv); dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("%s=%q is not a directory: %v", render.CacheEnv, dir, err)
		}
		return
	}
	dir := dynamoDBLocalDir(t)
	check := `test -d "$` + render.CacheEnv + `" && exit 3`
	if got := run(dir, []string{"sh", "-c", check}); got != 3 {
		t.Errorf("run(sh -c %q) = %d, want 3: the render cache did not reach the command", check, got)
	}
}

// dynamoDBLocalDir is the DynamoDB Local testenv starts, which plain go
// test on a fresh clone has not installed: the test is then skipped,
// saying how to install it (failed under CI=true).
func dynamoDBLocalDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(awstest.ModuleRoot(), ".cache", "dynamodb-local")
	if _, err := os.Stat(filepath.Join(dir, "DynamoDBLocal.jar")); err != nil {
		awstest.Missing(t, "needs DynamoDB Local in %s: run scripts/install-dynamodb-local.sh, or make test", dir)
	}
	return dir
}

func TestUnshimmed(t *testing.T) {
	root := t.TempDir()
	shims, plain, bin := filepath.Join(root, "shims"), filepath.Join(root, "plain"), filepath.Join(root, "bin")
	exe := func(dir, name, body string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"aws", "cfn-lint", "moto_server", "broken"} {
		exe(shims, tool, "exit 0")
	}
	exe(plain, "python3", "exit 0")
	// pyenv resolves aws, cfn-lint and moto_server (one version's bin), not broken.
	exe(bin, "pyenv", `case "$2" in aws|cfn-lint|moto_server) echo /versions/3.11/bin/$2;; *) echo "pyenv: $2: command not found" >&2; exit 127;; esac`)
	path := strings.Join([]string{bin, shims, plain}, string(os.PathListSeparator))
	t.Setenv("PATH", path)
	cases := []struct {
		tools []string
		want  string
	}{
		{[]string{"aws"}, "/versions/3.11/bin" + string(os.PathListSeparator) + path},
		{[]string{"aws", "cfn-lint", "moto_server"}, "/versions/3.11/bin" + string(os.PathListSeparator) + path},
		{[]string{"python3"}, path}, // no shim
		{[]string{"broken"}, path},  // pyenv cannot resolve it
		{[]string{"missing"}, path}, // not on PATH at all
	}
	for _, c := range cases {
		if got := unshimmed(c.tools...); got != c.want {
			t.Errorf("unshimmed(%v) = %q, want %q", c.tools, got, c.want)
		}
	}
}
