//go:build long

package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/emulator"
)

// TestCtrlCLeavesNothingBehind (make test-long: it builds the binary and
// starts its own emulators, as a fresh machine's `make run` does) runs `make run`'s binary as a process, waits
// for its banner, interrupts it like Ctrl-C and checks that every port it
// served (HTTP API, target, moto, DynamoDB Local) is closed afterwards.
func TestCtrlCLeavesNothingBehind(t *testing.T) {
	if _, err := exec.LookPath("moto_server"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("moto_server not installed")
	}
	root := awstest.ModuleRoot()
	bin := filepath.Join(t.TempDir(), "devstack")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ports, err := emulator.FreePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "functions.log")
	cmd := exec.Command(bin)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("ADDR=127.0.0.1:%d", ports[0]), fmt.Sprintf("TARGET_ADDR=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("MOTO_PORT=%d", ports[2]), fmt.Sprintf("DYNAMODB_PORT=%d", ports[3]), "LOG_FILE="+logFile)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	banner := make(chan string, 1)
	var mu sync.Mutex
	var b strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			b.WriteString(sc.Text() + "\n")
			out := b.String()
			mu.Unlock()
			if strings.Contains(sc.Text(), "Stop with Ctrl-C") {
				banner <- out
			}
		}
	}()
	select {
	case b := <-banner:
		if !strings.Contains(b, fmt.Sprintf("http://127.0.0.1:%d/webhooks/demo/stripe", ports[0])) {
			t.Errorf("banner lacks the Stripe URL:\n%s", b)
		}
		if !strings.Contains(b, "make inspect TENANT=") || !strings.Contains(b, logFile) {
			t.Errorf("banner says nothing of make inspect and LOG_FILE %s:\n%s", logFile, b)
		}
	case <-time.After(4 * time.Minute): // emulators start slowly on a loaded machine
		_ = cmd.Process.Kill()
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no banner within 4m; stderr:\n%s", b.String())
	}
	for _, p := range ports {
		if !listening(p) {
			t.Errorf("port %d not served while running", p)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	interrupted := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("stopped %s after Ctrl-C", time.Since(interrupted).Round(time.Millisecond))
		if err != nil {
			t.Errorf("exit after Ctrl-C: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("did not stop within 30s of Ctrl-C; stderr:\n%s", b.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range ports {
		for listening(p) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if listening(p) {
			t.Errorf("port %d still served after Ctrl-C: a process was left behind", p)
		}
	}
}

func listening(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
