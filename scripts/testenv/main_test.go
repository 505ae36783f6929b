package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/awstest"
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
