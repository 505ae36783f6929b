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
	"strconv"
	"syscall"

	"github.com/hookpack/hookpack/pkg/local/devstack"
)

func main() {
	addr := flag.String("addr", envOr("ADDR", "127.0.0.1:3000"), "listen address of the local HTTP API (env ADDR)")
	targetAddr := flag.String("target-addr", envOr("TARGET_ADDR", "127.0.0.1:3001"), "listen address of the local target service (env TARGET_ADDR)")
	tenants := flag.String("tenants", envOr("TENANTS_FILE", "events/tenants.json"), "local tenants file (env TENANTS_FILE)")
	motoPort := flag.Int("moto-port", envInt("MOTO_PORT", 4566), "port of the moto server it starts (env MOTO_PORT; events/env.json expects 4566)")
	ddbDir := flag.String("dynamodb-local", envOr("DYNAMODB_LOCAL_DIR", ".cache/dynamodb-local"), "DynamoDB Local to serve DynamoDB (atomic conditional writes, as in AWS); empty uses moto's DynamoDB")
	ddbPort := flag.Int("dynamodb-port", envInt("DYNAMODB_PORT", 8000), "port of the DynamoDB Local it starts (env DYNAMODB_PORT; events/env.json expects 8000)")
	host := flag.String("emulator-host", envOr("EMULATOR_HOST", "127.0.0.1"), "address the started moto binds (env EMULATOR_HOST; 0.0.0.0 for sam local invoke on Docker Desktop)")
	endpoint := flag.String("endpoint", os.Getenv("AWS_ENDPOINT_URL"), "use this running moto server instead of starting one")
	jsonLogs := flag.Bool("json", os.Getenv("LOG_FORMAT") == "json", "log the functions' raw JSON lines, as CloudWatch receives them (env LOG_FORMAT=json)")
	flag.Parse()

	var logger *slog.Logger
	if *jsonLogs {
		logger = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	} else {
		logger = slog.New(devstack.NewPretty(os.Stdout))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	s, err := devstack.Start(ctx, devstack.Options{TenantsFile: *tenants, Addr: *addr, TargetAddr: *targetAddr, Endpoint: *endpoint, MotoPort: *motoPort, Host: *host, DynamoDBLocalDir: *ddbDir, DynamoDBLocalPort: *ddbPort, Logger: logger})
	if err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
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

func envInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return n
	}
	return def
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
