package main

import (
	"net/http"
	"os"
	"path/filepath"
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
	dir := filepath.Join(awstest.ModuleRoot(), ".cache", "dynamodb-local")
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
	dir := filepath.Join(awstest.ModuleRoot(), ".cache", "dynamodb-local")
	check := `test -d "$` + render.CacheEnv + `" && exit 3`
	if got := run(dir, []string{"sh", "-c", check}); got != 3 {
		t.Errorf("run(sh -c %q) = %d, want 3: the render cache did not reach the command", check, got)
	}
}
