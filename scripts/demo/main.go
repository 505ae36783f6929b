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

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/local/demo"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/tenant"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "make demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	env := devstack.EnvOptions()
	addr, targetAddr, tenantsFile := env.Addr, env.TargetAddr, env.TenantsFile
	f, err := tenant.LoadFile(tenantsFile, provider.Registry())
	if err != nil {
		return err
	}
	endpoint := fmt.Sprint("http://127.0.0.1:", env.MotoPort)
	if !listening(addr) {
		fmt.Println("No `make run` answers on " + addr + "; starting the stack for this demo (its logs: demo-stack.log)")
		logf, err := os.Create("demo-stack.log")
		if err != nil {
			return err
		}
		defer logf.Close()
		s, err := devstack.Start(ctx, devstack.Options{TenantsFile: tenantsFile, Addr: addr, TargetAddr: targetAddr, MotoPort: env.MotoPort, DynamoDBLocalDir: ".cache/dynamodb-local", DynamoDBLocalPort: 8000, Logger: slog.New(slog.NewJSONHandler(io.Writer(logf), nil))})
		if err != nil {
			return err
		}
		defer s.Close()
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { _ = s.Serve(sctx) }()
		endpoint = s.Endpoint
	}
	cfg, err := emulator.AWSConfig(ctx, endpoint, "")
	if err != nil {
		return err
	}
	const tenantID = "demo"
	t, ok := f.Tenants[tenantID]
	if !ok {
		return fmt.Errorf("%s has no %q tenant", tenantsFile, tenantID)
	}
	rep, err := demo.Run(ctx, demo.Options{
		BaseURL: "http://" + addr, TargetURL: "http://" + targetAddr, Tenant: tenantID, Providers: t.Providers,
		SQS:    sqs.NewFromConfig(cfg),
		DLQURL: endpoint + "/123456789012/" + devstack.QueueName(devstack.DefaultName, tenantID) + "-dlq.fifo",
		Out:    os.Stdout,
	})
	rep.Print(os.Stdout)
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
