// Command testenv runs a command (make test's go test) with one DynamoDB
// Local for all of it, on a free loopback port: its endpoint goes to the
// command as HOOKPACK_DYNAMODB_LOCAL_ENDPOINT, which package awstest uses
// instead of starting a JVM per test binary (every test names its own
// tables). moto stays one per test binary: the FIFO corrections the
// project adds to it (sequence numbers, DLQ moves) keep state for the whole
// server, and tests that check them must not meet other packages' traffic.
// Each is forked from one warm moto (a zygote, on the Unix socket named by
// HOOKPACK_MOTO_ZYGOTE) instead of started cold: about 2 s of CPU saved per
// test binary that uses moto. Templates rendered through package render
// (the SAM transform, seconds of CPU) are rendered once for the whole run,
// shared through the directory named by HOOKPACK_RENDER_CACHE.
// It exits with the command's status and stops both emulators.
//
//	go run ./scripts/testenv [-dynamodb-local-dir .cache/dynamodb-local] -- go test ./...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/render"
)

func main() {
	dir := flag.String("dynamodb-local-dir", ".cache/dynamodb-local", "DynamoDB Local's directory (scripts/install-dynamodb-local.sh)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: testenv [-dynamodb-local-dir dir] -- command [args…]")
		os.Exit(2)
	}
	os.Exit(run(*dir, flag.Args()))
}

func run(dir string, argv []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ddb, err := emulator.StartDynamoDBLocal(ctx, dir, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer ddb.Stop()
	tmp, err := os.MkdirTemp("", "hookpack-testenv-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	socket := filepath.Join(tmp, "moto.sock")
	zygote, err := emulator.StartMotoZygote(ctx, socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer zygote.Stop()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	renders := filepath.Join(tmp, "renders")
	if err := os.Mkdir(renders, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	cmd.Env = append(os.Environ(), "HOOKPACK_DYNAMODB_LOCAL_ENDPOINT="+ddb.Endpoint, "HOOKPACK_MOTO_ZYGOTE="+socket, render.CacheEnv+"="+renders,
		"PATH="+unshimmed("aws", "python3", "cfn-lint"))
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
}

// unshimmed returns $PATH with, in front, the directory each tool resolves
// to when PATH finds it through a pyenv shim (…/shims/tool): the shim runs
// pyenv's bash scripts to pick the same program on every call, about 0.3 s
// of CPU each, and the tests call aws, python3 and cfn-lint dozens of
// times. A tool that is no shim, or that pyenv cannot resolve, keeps
// PATH's own resolution.
func unshimmed(tools ...string) string {
	var front []string
	for _, tool := range tools {
		found, err := exec.LookPath(tool)
		if err != nil || filepath.Base(filepath.Dir(found)) != "shims" {
			continue
		}
		out, err := exec.Command("pyenv", "which", tool).Output()
		if err != nil {
			continue
		}
		dir := filepath.Dir(strings.TrimSpace(string(out)))
		if !slices.Contains(front, dir) {
			front = append(front, dir)
		}
	}
	return strings.Join(append(front, os.Getenv("PATH")), string(os.PathListSeparator))
}
