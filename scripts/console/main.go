// Command console serves the operator console (package console): every
// tenant's queue, dead letters and destinations at a glance, an event found
// by any id its sender shows with its timeline, the dead-letter list, a
// chart of each destination's deliveries, and redrives after a dry run.
//
//	go run ./scripts/console -local                 # make run's stack (make console)
//	go run ./scripts/console -stack hookpack        # a deployed core stack
//	go run ./scripts/console -stack hookpack -addr 0.0.0.0:3002   # prints the token to open it with
//
// Deployed: names come from the core stack's outputs (DescribeStacks),
// credentials and region from the usual AWS environment, as for
// scripts/inspect; nothing is deployed. -local reads `make run`'s
// emulators (MOTO_PORT, DYNAMODB_PORT, LOG_FILE as make run uses them). It
// listens on -addr (env CONSOLE_ADDR, default 127.0.0.1:3002); on an
// address other than loopback every request must carry the token it
// prints. Exit status: 0 after Ctrl-C, 1 when it cannot start, 2 bad
// usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/hookpack/hookpack/pkg/console"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/scripts/internal/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", devstack.Getenv("CONSOLE_ADDR", console.DefaultAddr), "listen address (env CONSOLE_ADDR); not loopback: requests need the printed token")
	st := stack.Define(fs)
	refresh := fs.Duration("refresh", 10*time.Second, "how often the overview and the chart reload themselves")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: console [-local | -stack NAME] [-addr HOST:PORT]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "console: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	awsCfg, d, metrics, err := st.Deployment(ctx, "")
	if err != nil {
		fmt.Fprintln(stderr, "console:", err)
		return 1
	}
	cfg := console.AWSConfig(awsCfg, d, metrics)
	cfg.Stack = st.Stack
	if st.Local {
		cfg.Stack = st.Name
	}
	ln, token, err := console.Listen(*addr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	cfg.Token, cfg.Refresh = token, *refresh
	cfg.Logger = slog.New(slog.NewJSONHandler(stderr, nil))
	srv, err := console.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	url := "http://" + devstack.DialAddr(ln.Addr()) + "/"
	if token != "" {
		url += "?token=" + token
		fmt.Fprintf(stdout, "hookpack console of %s listens on %s, beyond loopback: open it with its token\n", cfg.Stack, ln.Addr())
	}
	fmt.Fprintf(stdout, "hookpack console of %s: %s\n", cfg.Stack, url)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = hs.Shutdown(sctx)
		cancel()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "console:", err)
		return 1
	}
	return 0
}
