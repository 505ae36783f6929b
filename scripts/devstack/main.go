// Command devstack is `make run`: the pack on this machine, on emulators,
// with no AWS account. See package devstack.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hookpack/hookpack/pkg/local/devstack"
)

func main() {
	o := devstack.EnvOptions()
	flag.StringVar(&o.Addr, "addr", o.Addr, "listen address of the local HTTP API (env ADDR)")
	flag.StringVar(&o.TargetAddr, "target-addr", o.TargetAddr, "listen address of the local target service (env TARGET_ADDR)")
	flag.StringVar(&o.TenantsFile, "tenants", o.TenantsFile, "local tenants file (env TENANTS_FILE)")
	flag.IntVar(&o.MotoPort, "moto-port", o.MotoPort, "port of the moto server it starts (env MOTO_PORT; events/env.json expects 4566)")
	flag.StringVar(&o.DynamoDBLocalDir, "dynamodb-local", o.DynamoDBLocalDir, "DynamoDB Local to serve DynamoDB (atomic conditional writes, as in AWS); empty uses moto's DynamoDB")
	flag.IntVar(&o.DynamoDBLocalPort, "dynamodb-port", o.DynamoDBLocalPort, "port of the DynamoDB Local it starts (env DYNAMODB_PORT; events/env.json expects 8000)")
	flag.StringVar(&o.Host, "emulator-host", o.Host, "address the started moto binds (env EMULATOR_HOST; 0.0.0.0 for sam local invoke on Docker Desktop)")
	flag.StringVar(&o.Endpoint, "endpoint", o.Endpoint, "use this running moto server instead of starting one")
	jsonLogs := flag.Bool("json", os.Getenv("LOG_FORMAT") == "json", "log the functions' raw JSON lines, as CloudWatch receives them (env LOG_FORMAT=json)")
	flag.Parse()

	o.Logger = slog.New(devstack.NewPretty(os.Stdout))
	if *jsonLogs {
		o.Logger = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	s, err := devstack.Start(ctx, o)
	if err != nil {
		// One line per problem: a bad tenants file names each.
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, "make run:", line)
		}
		os.Exit(1)
	}
	defer s.Close()
	fmt.Fprint(os.Stderr, s.Banner())
	if err := s.Serve(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		s.Close()
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "stopped")
}
