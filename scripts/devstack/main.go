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
	"syscall"

	"github.com/hookpack/hookpack/pkg/devstack"
)

func main() {
	addr := flag.String("addr", envOr("ADDR", "127.0.0.1:3000"), "listen address of the local HTTP API (env ADDR)")
	tenants := flag.String("tenants", envOr("TENANTS_FILE", "events/tenants.json"), "local tenants file (env TENANTS_FILE)")
	endpoint := flag.String("endpoint", os.Getenv("AWS_ENDPOINT_URL"), "use this running moto server instead of starting one")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	s, err := devstack.Start(ctx, devstack.Options{TenantsFile: *tenants, Addr: *addr, Endpoint: *endpoint, Logger: logger})
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

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
