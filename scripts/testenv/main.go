// Command testenv runs a command (make test's go test) with one moto server
// and one DynamoDB Local for all of it, on free loopback ports: their
// endpoints go to the command as HOOKPACK_MOTO_ENDPOINT and
// HOOKPACK_DYNAMODB_LOCAL_ENDPOINT, which package awstest uses instead of
// starting an emulator per test binary (every test names its own tables,
// queues and stacks). It exits with the command's status and stops both
// emulators.
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
	"syscall"

	"github.com/hookpack/hookpack/pkg/local/emulator"
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
	type started struct {
		p   *emulator.Process
		err error
	}
	motoC, ddbC := make(chan started, 1), make(chan started, 1)
	go func() { p, err := emulator.StartMoto(ctx, 0); motoC <- started{p, err} }()
	go func() { p, err := emulator.StartDynamoDBLocal(ctx, dir, 0); ddbC <- started{p, err} }()
	moto, ddb := <-motoC, <-ddbC
	defer moto.p.Stop()
	defer ddb.p.Stop()
	if err := errors.Join(moto.err, ddb.err); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "HOOKPACK_MOTO_ENDPOINT="+moto.p.Endpoint, "HOOKPACK_DYNAMODB_LOCAL_ENDPOINT="+ddb.p.Endpoint)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	err := cmd.Run()
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
