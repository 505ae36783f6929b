// Package awstest gives integration tests real AWS emulators: moto server
// (DynamoDB, SQS, SSM, …) and AWS's DynamoDB Local. Each test binary starts
// at most one of each (package emulator), on a free loopback port, lazily;
// the emulator dies with the test binary, so nothing is left running.
//
// When an emulator cannot be started, tests skip locally with instructions,
// and fail when CI=true: an integration test never skips silently in CI.
package awstest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/local/bootstrap"
	"github.com/hookpack/hookpack/pkg/local/emulator"
)

// Region is the region every emulator client uses.
const Region = emulator.Region

type server struct {
	once     sync.Once
	endpoint string
	err      error
	// proc is kept for the test binary's life: a forked moto lives as long
	// as its connection, which a collected Process would close.
	proc *emulator.Process
}

var moto, ddbLocal server

// Moto returns the endpoint of this test binary's moto server, starting it on
// first use: forked warm from the zygote at HOOKPACK_MOTO_ZYGOTE when set
// (make test's scripts/testenv), else started cold. Env
// HOOKPACK_MOTO_ENDPOINT points at an already running one.
func Moto(t testing.TB) string {
	t.Helper()
	return moto.endpointFor(t, "moto", "HOOKPACK_MOTO_ENDPOINT", func() (*emulator.Process, error) {
		if socket := os.Getenv("HOOKPACK_MOTO_ZYGOTE"); socket != "" {
			return emulator.ForkMoto(context.Background(), socket)
		}
		return emulator.StartMoto(context.Background(), 0)
	})
}

// DynamoDBLocal returns the endpoint of this test binary's DynamoDB Local,
// starting it on first use from HOOKPACK_DYNAMODB_LOCAL_DIR or the module's
// .cache/dynamodb-local (installed by scripts/install-dynamodb-local.sh).
// Env HOOKPACK_DYNAMODB_LOCAL_ENDPOINT points at an already running one.
func DynamoDBLocal(t testing.TB) string {
	t.Helper()
	return ddbLocal.endpointFor(t, "DynamoDB Local", "HOOKPACK_DYNAMODB_LOCAL_ENDPOINT", func() (*emulator.Process, error) {
		dir := os.Getenv("HOOKPACK_DYNAMODB_LOCAL_DIR")
		if dir == "" {
			dir = filepath.Join(ModuleRoot(), ".cache", "dynamodb-local")
		}
		return emulator.StartDynamoDBLocal(context.Background(), dir, 0)
	})
}

// endpointFor returns the endpoint in env, or starts the emulator once. An
// emulator that cannot start skips t, or fails it when CI=true.
func (s *server) endpointFor(t testing.TB, name, env string, start func() (*emulator.Process, error)) string {
	t.Helper()
	s.once.Do(func() {
		if s.endpoint = os.Getenv(env); s.endpoint != "" {
			return
		}
		p, err := start()
		if err != nil {
			s.err = err
			return
		}
		s.endpoint, s.proc = p.Endpoint, p
	})
	if s.err != nil {
		Missing(t, "%s emulator unavailable: %v", name, s.err)
	}
	return s.endpoint
}

// Missing skips t for want of something plain go test does not install
// (format says what, and how to get it: make test's emulators do), or
// fails it when CI=true: an integration test never skips silently in CI.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (fatal under CI=true)", msg)
	}
	t.Skipf("%s (set CI=true to make this fatal)", msg)
}

// Config returns an AWS config for endpoint with static fake credentials.
func Config(t testing.TB, endpoint string) aws.Config {
	t.Helper()
	cfg, err := emulator.AWSConfig(context.Background(), endpoint, "")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Bootstrap returns the bootstrap of functions/<name> built for this
// machine with make build's flags (package bootstrap: make test's, or one
// build per test binary into bin/local, where make invoke builds).
func Bootstrap(t testing.TB, name string) string {
	t.Helper()
	bins, err := bootstrap.ForHost(context.Background(), ModuleRoot(), filepath.Join(ModuleRoot(), "bin", "local"))
	if err != nil {
		t.Fatal(err)
	}
	bin, ok := bins[name]
	if !ok {
		t.Fatalf("no functions/%s/main.go: the functions are %v", name, bins)
	}
	return bin
}

// ModuleRoot returns the directory holding go.mod.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Name returns a unique resource name for t (tables and queues are shared
// per emulator, so each test makes its own).
func Name(t testing.TB) string {
	n := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, t.Name())
	if len(n) > 50 {
		n = n[len(n)-50:]
	}
	return fmt.Sprintf("%s-%d", strings.Trim(n, "-"), time.Now().UnixNano()%1_000_000_000)
}
