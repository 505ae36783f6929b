package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

// TestEmulatorsReachTheCommand: under make test, the tests see the moto and
// DynamoDB Local testenv started, and both answer (awstest would otherwise
// start one of each per test binary, unseen but slower). Run on its own, it
// runs a command under testenv and expects its exit status back, after the
// command found both endpoints.
func TestEmulatorsReachTheCommand(t *testing.T) {
	moto, ddb := os.Getenv("HOOKPACK_MOTO_ENDPOINT"), os.Getenv("HOOKPACK_DYNAMODB_LOCAL_ENDPOINT")
	if moto != "" || ddb != "" {
		for _, endpoint := range []string{moto, ddb} {
			resp, err := http.Get(endpoint + "/")
			if err != nil {
				t.Fatalf("emulator at %q: %v", endpoint, err)
			}
			resp.Body.Close()
		}
		return
	}
	dir := filepath.Join(awstest.ModuleRoot(), ".cache", "dynamodb-local")
	check := `test -n "$HOOKPACK_MOTO_ENDPOINT" && test -n "$HOOKPACK_DYNAMODB_LOCAL_ENDPOINT" && exit 3`
	if got := run(dir, []string{"sh", "-c", check}); got != 3 {
		t.Errorf("run(sh -c %q) = %d, want 3: the endpoints did not reach the command, or its status was lost", check, got)
	}
}
