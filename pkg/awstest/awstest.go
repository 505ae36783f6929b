// Package awstest starts real AWS emulators for integration tests: moto
// server (DynamoDB, SQS, SSM, …) and AWS's DynamoDB Local. Each test binary
// starts at most one of each, on a free loopback port, lazily, and the
// emulator dies with the test binary (Linux parent-death signal), so nothing
// is left running.
//
// When an emulator cannot be started, tests skip locally with instructions,
// and fail when CI=true: an integration test never skips silently in CI.
package awstest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Region is the region every emulator client uses.
const Region = "us-east-1"

type server struct {
	once     sync.Once
	endpoint string
	err      error
}

var moto, ddbLocal server

// Moto returns the endpoint of this test binary's moto server, starting it on
// first use. Env HOOKPACK_MOTO_ENDPOINT points at an already running one.
func Moto(t testing.TB) string {
	t.Helper()
	moto.once.Do(func() {
		if ep := os.Getenv("HOOKPACK_MOTO_ENDPOINT"); ep != "" {
			moto.endpoint = ep
			return
		}
		bin, err := exec.LookPath("moto_server")
		if err != nil {
			moto.err = fmt.Errorf("moto_server not on PATH (see ../shared/LOCAL-AWS.md)")
			return
		}
		moto.endpoint, moto.err = start(func(port int) []string {
			return []string{bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port)}
		}, "/moto-api/")
	})
	return need(t, "moto", &moto)
}

// DynamoDBLocal returns the endpoint of this test binary's DynamoDB Local,
// starting it on first use from HOOKPACK_DYNAMODB_LOCAL_DIR or the module's
// .cache/dynamodb-local (installed by scripts/install-dynamodb-local.sh).
// Env HOOKPACK_DYNAMODB_LOCAL_ENDPOINT points at an already running one.
func DynamoDBLocal(t testing.TB) string {
	t.Helper()
	ddbLocal.once.Do(func() {
		if ep := os.Getenv("HOOKPACK_DYNAMODB_LOCAL_ENDPOINT"); ep != "" {
			ddbLocal.endpoint = ep
			return
		}
		dir := os.Getenv("HOOKPACK_DYNAMODB_LOCAL_DIR")
		if dir == "" {
			dir = filepath.Join(ModuleRoot(), ".cache", "dynamodb-local")
		}
		jar := filepath.Join(dir, "DynamoDBLocal.jar")
		if _, err := os.Stat(jar); err != nil {
			ddbLocal.err = fmt.Errorf("%s missing: run scripts/install-dynamodb-local.sh", jar)
			return
		}
		ddbLocal.endpoint, ddbLocal.err = start(func(port int) []string {
			return []string{"java", "-Djava.library.path=" + filepath.Join(dir, "DynamoDBLocal_lib"),
				"-jar", jar, "-inMemory", "-port", fmt.Sprint(port), "-disableTelemetry"}
		}, "/")
	})
	return need(t, "DynamoDB Local", &ddbLocal)
}

func need(t testing.TB, name string, s *server) string {
	t.Helper()
	if s.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s emulator unavailable under CI=true: %v", name, s.err)
		}
		t.Skipf("%s emulator unavailable (set CI=true to make this fatal): %v", name, s.err)
	}
	return s.endpoint
}

// start launches argv on a free port and waits until it answers HTTP. The
// process is started from a goroutine locked to its OS thread, which never
// exits, so PR_SET_PDEATHSIG fires only when the test binary dies.
func start(argv func(port int) []string, probe string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	args := argv(port)
	started := make(chan error, 1)
	logf, err := os.CreateTemp("", "awstest-*.log")
	if err != nil {
		return "", err
	}
	go func() {
		runtime.LockOSThread()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		select {} // keep this thread alive: its exit would fire the death signal
	}()
	if err := <-started; err != nil {
		return "", fmt.Errorf("start %s: %w", args[0], err)
	}
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(endpoint + probe)
		if err == nil {
			resp.Body.Close()
			return endpoint, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _ := os.ReadFile(logf.Name())
	return "", fmt.Errorf("%s did not answer on %s within 60s: %s", args[0], endpoint, strings.TrimSpace(string(out)))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Config returns an AWS config for endpoint with static fake credentials.
func Config(t testing.TB, endpoint string) aws.Config {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion(Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithBaseEndpoint(endpoint),
	)
	if err != nil {
		t.Fatalf("aws config: %v", err)
	}
	return cfg
}

// ModuleRoot returns the directory holding go.mod.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
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
