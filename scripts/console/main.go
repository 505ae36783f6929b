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
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/console"
	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/tenant"
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
	stack := fs.String("stack", devstack.Getenv("STACK_NAME", "hookpack"), "deployed core stack (env STACK_NAME)")
	local := fs.Bool("local", false, "read `make run`'s emulators instead of a deployed stack")
	name := fs.String("name", devstack.DefaultName, "-local: the local stack's name")
	endpoint := fs.String("endpoint", fmt.Sprintf("http://127.0.0.1:%d", devstack.GetenvInt("MOTO_PORT", 4566)), "-local: moto's endpoint (env MOTO_PORT)")
	ddbEndpoint := fs.String("dynamodb-endpoint", fmt.Sprintf("http://127.0.0.1:%d", devstack.GetenvInt("DYNAMODB_PORT", 8000)), "-local: DynamoDB Local's endpoint (env DYNAMODB_PORT; empty: moto's)")
	logFile := fs.String("log-file", devstack.Getenv("LOG_FILE", devstack.DefaultLogFile), "-local: the functions' log `make run` writes, searched for an event id (env LOG_FILE)")
	refresh := fs.Duration("refresh", 10*time.Second, "how often the overview and the chart reload themselves")
	since := fs.Duration("since", 14*24*time.Hour, "deployed: how far back Logs Insights searches the log groups for an event")
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
	cfg, err := wire(ctx, *local, *stack, *name, *endpoint, *ddbEndpoint, *logFile, *since)
	if err != nil {
		fmt.Fprintln(stderr, "console:", err)
		return 1
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

// wire builds the console's dependencies on make run's emulators or a
// deployed stack.
func wire(ctx context.Context, local bool, stack, name, endpoint, ddbEndpoint, logFile string, since time.Duration) (console.Config, error) {
	if !local {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return console.Config{}, fmt.Errorf("aws config: %w", err)
		}
		d, err := inspect.FromStack(ctx, cloudformation.NewFromConfig(cfg), stack)
		if err != nil {
			return console.Config{}, err
		}
		d.IngestLogSince = since
		d.ReplayCommand = "go run ./scripts/replay -stack " + stack + " -tenant {tenant} -conversation {conversation} redrive"
		c := console.AWSConfig(cfg, d, aws.ToString(cfg.BaseEndpoint) == "")
		c.Stack = stack
		return c, nil
	}
	cfg, err := emulator.AWSConfig(ctx, endpoint, ddbEndpoint)
	if err != nil {
		return console.Config{}, err
	}
	// The queue URL template comes from a tenant's queue on the emulator.
	ids, err := tenant.NewSSM(ssm.NewFromConfig(cfg), devstack.Stores(name).ParameterPrefix).IDs(ctx)
	if err != nil {
		return console.Config{}, fmt.Errorf("tenants of %s at %s: %w (is `make run` running?)", name, endpoint, err)
	}
	if len(ids) == 0 {
		return console.Config{}, fmt.Errorf("no tenant is onboarded on %s at %s (is `make run` running?)", name, endpoint)
	}
	slices.Sort(ids)
	d, err := devstack.Inspected(ctx, cfg, name, ids[0])
	if err != nil {
		return console.Config{}, err
	}
	d.IngestLogFile = logFile
	d.ReplayCommand = "make replay TENANT={tenant} CONVERSATION={conversation} ACTION=redrive"
	c := console.AWSConfig(cfg, d, false)
	c.Stack = name
	return c, nil
}
