// Command demo is `make demo`: it shows the pack's guarantees against a
// running `make run`, or starts the stack itself when none answers. See
// package demo.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/local/demo"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "make demo:", err)
		os.Exit(1)
	}
}

// run runs the demo with make's variables (devstack.EnvOptions): against
// make run when ADDR answers, else on a stack of its own started as make
// run would start it.
func run(ctx context.Context, out io.Writer) error {
	env := devstack.EnvOptions()
	addr, targetAddr, tenantsFile := env.Addr, env.TargetAddr, env.TenantsFile
	const tenantID = "demo"
	t, err := devstack.LoadTenant(tenantsFile, tenantID)
	if err != nil {
		return err
	}
	endpoint := env.Endpoint
	if endpoint == "" {
		endpoint = fmt.Sprintf("http://127.0.0.1:%d", env.MotoPort)
	}
	// make run's DynamoDB Local, when it runs one (else moto serves it).
	var ddbEndpoint string
	if a := fmt.Sprintf("127.0.0.1:%d", env.DynamoDBLocalPort); listening(a) {
		ddbEndpoint = "http://" + a
	}
	if !listening(addr) {
		// The stack make run would start, with every make variable; its
		// functions log to LOG_FILE, as make run's do.
		fmt.Fprintf(out, "No `make run` answers on %s; starting the stack for this demo (its logs: %s)\n", addr, env.LogFile)
		env.Logger = slog.New(slog.DiscardHandler)
		s, err := devstack.Start(ctx, env)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "moto at %s, DynamoDB Local at %s, target service at %s\n", s.Endpoint, s.DynamoDBEndpoint, s.TargetURL())
		defer s.Close()
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { _ = s.Serve(sctx) }()
		endpoint, ddbEndpoint = s.Endpoint, s.DynamoDBEndpoint
	}
	cfg, err := emulator.AWSConfig(ctx, endpoint, ddbEndpoint)
	if err != nil {
		return err
	}
	d, err := devstack.Inspected(ctx, cfg, devstack.DefaultName, tenantID)
	if err != nil {
		return err
	}
	dlq, err := worker.DLQURL(queue.URL(d.QueueURLTemplate, tenantID))
	if err != nil {
		return err
	}
	rep, err := demo.Run(ctx, demo.Options{
		BaseURL: "http://" + addr, TargetURL: "http://" + targetAddr, Tenant: tenantID, Providers: t.Providers,
		SQS: sqs.NewFromConfig(cfg), DLQURL: dlq, Out: out,
	})
	rep.Print(out)
	if err != nil {
		return err
	}
	// The backlog scenario needs the tenant with a rated destination.
	relay, err := devstack.LoadTenant(tenantsFile, demo.BacklogTenant)
	if err != nil {
		fmt.Fprintf(out, "\nNo backlog scenario: %v\n", err)
		return nil
	}
	b, err := demo.RunBacklog(ctx, demo.BacklogOptions{
		BaseURL: "http://" + addr, TargetURL: "http://" + targetAddr, Tenant: demo.BacklogTenant,
		Stripe: relay.Providers["stripe"], Outbound: relay.Outbound, Rated: demo.BacklogDestination, Out: out,
	})
	b.Print(out)
	if err != nil {
		return err
	}
	// The same tenant's billing paused while audit keeps delivering, then
	// resumed: its backlog drains in order (the worker's waits are read
	// from LOG_FILE, where make run and the stack above write them).
	rd, err := devstack.Inspected(ctx, cfg, devstack.DefaultName, demo.BacklogTenant)
	if err != nil {
		return err
	}
	relayDLQ, err := worker.DLQURL(queue.URL(rd.QueueURLTemplate, demo.BacklogTenant))
	if err != nil {
		return err
	}
	p, err := demo.RunPause(ctx, demo.PauseOptions{
		BaseURL: "http://" + addr, TargetURL: "http://" + targetAddr, Tenant: demo.BacklogTenant,
		Stripe: relay.Providers["stripe"], Outbound: relay.Outbound, Paused: demo.PausedDestination,
		States: destination.NewDynamoDB(dynamodb.NewFromConfig(cfg), d.LedgerTable), SQS: sqs.NewFromConfig(cfg),
		DLQURL: relayDLQ, LogFile: env.LogFile, Out: out,
	})
	p.Print(out)
	return err
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
