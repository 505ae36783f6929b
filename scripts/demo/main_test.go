//go:build long

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/emulator"
)

// TestRunFollowsMakeVariables (make test-long: pkg/local/demo's TestEndToEnd
// runs the same demo in make test, on the run's shared emulators) runs make
// demo as a fresh machine would,
// with no make run answering and every port and directory moved: the stack
// it starts listens where the variables say, its functions log to
// LOG_FILE, and its dead letter stays visible for the next listing.
func TestRunFollowsMakeVariables(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole local pipeline")
	}
	root := awstest.ModuleRoot()
	ddbDir := filepath.Join(root, ".cache", "dynamodb-local")
	if _, err := os.Stat(filepath.Join(ddbDir, "DynamoDBLocal.jar")); err != nil {
		awstest.DynamoDBLocal(t) // skips, or fails under CI=true, saying how to install it
	}
	ports, err := emulator.FreePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "run", "functions.log")
	for k, v := range map[string]string{
		"ADDR": fmt.Sprint("127.0.0.1:", ports[0]), "TARGET_ADDR": fmt.Sprint("127.0.0.1:", ports[1]),
		"MOTO_PORT": fmt.Sprint(ports[2]), "DYNAMODB_PORT": fmt.Sprint(ports[3]), "DYNAMODB_LOCAL_DIR": ddbDir,
		"TENANTS_FILE": filepath.Join(root, "events", "tenants.json"), "LOG_FILE": logFile, "AWS_ENDPOINT_URL": "",
	} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("make demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		fmt.Sprintf("moto at http://127.0.0.1:%d", ports[2]),
		fmt.Sprintf("DynamoDB Local at http://127.0.0.1:%d", ports[3]),
		fmt.Sprintf("target service at http://127.0.0.1:%d", ports[1]),
		"applied 16 effects of this run",
		"after 1 attempt(s)",
		"Backlog drained at billing's rate",
		"billing: 25 forwards in",
		"audit: 30 forwards, no rate",
		"0 forwards where a filter excludes them, 0 conversations out of order",
		"A paused destination waits, the others never stop",
		"while paused: billing received nothing",
		"0 forwards to billing while paused, 0 to the others after its resume, 0 doubled, 0 streams out of order, 0 dead letters",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("make demo printed no %q:\n%s", want, out.String())
		}
	}
	if b, err := os.ReadFile(logFile); err != nil || !bytes.Contains(b, []byte(`"msg":"webhook"`)) {
		t.Errorf("LOG_FILE %s holds no ingest line: %v", logFile, err)
	}
}
