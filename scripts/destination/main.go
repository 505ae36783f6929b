// Command destination pauses and resumes a tenant's destination, and shows
// its destinations' states. While a destination is paused its events wait
// on the tenant's queue, no attempt counted and none dead-lettered before
// the end of its retention; on resume they are delivered in order, at the
// destination's rate. See package destination.
//
//	go run ./scripts/destination -local pause demo billing -reason "maintenance until 14:00"   # make pause …
//	go run ./scripts/destination -local resume demo billing                                   # make resume …
//	go run ./scripts/destination -local status demo
//	scripts/tenant/tenant.sh pause acme billing --reason "…"                                  # a deployed core stack
//	go run ./scripts/destination -stack hookpack resume acme billing
//
// Deployed, the ledger table and the tenants' parameters come from the core
// stack's outputs (-stack, default $STACK_NAME or hookpack), credentials and
// region from the usual AWS environment; -local reads `make run`'s
// emulators (MOTO_PORT, DYNAMODB_PORT as make run uses them).
//
// Exit status: 0 done (a destination paused already, or not paused, is
// said so and left as it is), 1 an AWS call failed, 2 bad usage: a
// missing or malformed argument, no reason, an unknown tenant or
// destination, a stack that is not a core stack. `go run` exits 1 whenever
// the program fails: build it to branch on its status.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/tenantid"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, time.Now)
	stop()
	os.Exit(code)
}

// usageError is bad input: exit status 2.
type usageError struct{ error }

// badInput returns a usageError of the formatted message.
func badInput(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

const usage = "usage: destination [-local | -stack NAME] pause TENANT DESTINATION -reason TEXT | resume TENANT DESTINATION | status TENANT"

func run(ctx context.Context, args []string, stdout, stderr io.Writer, now func() time.Time) int {
	fs := flag.NewFlagSet("destination", flag.ContinueOnError)
	fs.SetOutput(stderr)
	reason := fs.String("reason", "", "pause: why (required; shown in alerts, make inspect and status)")
	stack := fs.String("stack", devstack.Getenv("STACK_NAME", "hookpack"), "deployed core stack (env STACK_NAME)")
	local := fs.Bool("local", false, "`make run`'s emulators instead of a deployed stack")
	name := fs.String("name", devstack.DefaultName, "-local: the local stack's name")
	endpoint := fs.String("endpoint", fmt.Sprintf("http://127.0.0.1:%d", devstack.GetenvInt("MOTO_PORT", 4566)), "-local: moto's endpoint (env MOTO_PORT)")
	ddbEndpoint := fs.String("dynamodb-endpoint", fmt.Sprintf("http://127.0.0.1:%d", devstack.GetenvInt("DYNAMODB_PORT", 8000)), "-local: DynamoDB Local's endpoint (env DYNAMODB_PORT; empty: moto's)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	// Flags may come before, between or after the words.
	var words []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		words, rest = append(words, fs.Arg(0)), fs.Args()[1:]
	}
	c, err := parse(words, *reason)
	if err != nil {
		return fail(stderr, err)
	}
	st, err := open(ctx, *local, *stack, *name, *endpoint, *ddbEndpoint)
	if err != nil {
		return fail(stderr, err)
	}
	if err := c.run(ctx, st, stdout, now()); err != nil {
		return fail(stderr, err)
	}
	return 0
}

// command is one parsed invocation.
type command struct {
	verb, tenant, dest, reason string
}

// parse checks the words and the reason before any call.
func parse(words []string, reason string) (command, error) {
	if len(words) == 0 {
		return command{}, badInput("%s", usage)
	}
	c := command{verb: words[0], reason: reason}
	want := map[string]int{"pause": 3, "resume": 3, "status": 2}[c.verb]
	if want == 0 || len(words) != want {
		return c, badInput("%s", usage)
	}
	c.tenant = words[1]
	if err := tenantid.Validate(c.tenant); err != nil {
		return c, badInput("%v", err)
	}
	if want == 3 {
		c.dest = words[2]
		if err := tenant.CheckName(c.dest); err != nil {
			return c, badInput("destination name %q: %v", c.dest, err)
		}
	}
	switch {
	case c.verb == "pause":
		if err := destination.CheckReason(reason); err != nil {
			return c, badInput("-reason: %v", err)
		}
	case reason != "":
		return c, badInput("-reason is for pause only")
	}
	return c, nil
}

// stores are what a command reads and writes.
type stores struct {
	outbound interface {
		Outbound(ctx context.Context, id string) (tenant.Outbound, error)
	}
	states *destination.DynamoDB
}

// open wires the stores of make run's emulators or of a deployed stack.
func open(ctx context.Context, local bool, stack, name, endpoint, ddbEndpoint string) (stores, error) {
	var cfg aws.Config
	var d inspect.Deployment
	var err error
	if local {
		if cfg, err = emulator.AWSConfig(ctx, endpoint, ddbEndpoint); err != nil {
			return stores{}, err
		}
		d = devstack.Stores(name)
	} else {
		if cfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return stores{}, fmt.Errorf("aws config: %w", err)
		}
		if d, err = inspect.FromStack(ctx, cloudformation.NewFromConfig(cfg), stack); err != nil {
			return stores{}, err
		}
	}
	return stores{
		outbound: tenant.NewSSM(ssm.NewFromConfig(cfg), d.ParameterPrefix),
		states:   destination.NewDynamoDB(dynamodb.NewFromConfig(cfg), d.LedgerTable),
	}, nil
}

func (c command) run(ctx context.Context, st stores, w io.Writer, now time.Time) error {
	p := &destination.Pauser{Outbound: st.outbound, States: st.states, Now: func() time.Time { return now }}
	var said string
	var err error
	switch c.verb {
	case "pause":
		said, err = p.Pause(ctx, c.tenant, c.dest, c.reason)
	case "resume":
		said, err = p.Resume(ctx, c.tenant, c.dest)
	case "status":
		return c.status(ctx, p, st.states, w, now)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(w, said)
	return nil
}

// status prints the state of each of the tenant's destinations.
func (c command) status(ctx context.Context, p *destination.Pauser, states *destination.DynamoDB, w io.Writer, now time.Time) error {
	names, err := p.Names(ctx, c.tenant)
	if err != nil {
		return err
	}
	all, err := states.States(ctx, c.tenant)
	if err != nil {
		return err
	}
	for _, n := range names {
		fmt.Fprintf(w, "%s/%s: %s\n", c.tenant, n, all[n].Describe(now))
	}
	if len(names) == 0 {
		fmt.Fprintf(w, "tenant %s has no named destinations (a targetUrl cannot be paused)\n", c.tenant)
	}
	return nil
}

// fail prints err and returns the exit status it means: 2 for bad input,
// an unknown tenant or destination, or a stack that is not a core stack;
// 1 for a failed call.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "destination:", err)
	var bad usageError
	if errors.As(err, &bad) || errors.Is(err, inspect.ErrNotCoreStack) || errors.Is(err, destination.ErrInvalid) ||
		errors.Is(err, destination.ErrUnknown) || errors.Is(err, destination.ErrUnknownTenant) {
		return 2
	}
	return 1
}
