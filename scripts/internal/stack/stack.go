// Package stack chooses the deployment an operator tool reads
// (scripts/inspect, scripts/console): `make run`'s stack on its emulators
// (-local) or a deployed core stack (-stack), with the flags that name it.
package stack

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// Flags name the stack.
type Flags struct {
	Local                                            bool
	Stack, Name, Endpoint, DynamoDBEndpoint, LogFile string
	Since                                            time.Duration
}

// Define defines the flags on fs, with make run's defaults and the
// environment's (STACK_NAME, MOTO_PORT, DYNAMODB_PORT, LOG_FILE).
func Define(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.Stack, "stack", devstack.Getenv("STACK_NAME", "hookpack"), "deployed core stack (env STACK_NAME)")
	fs.BoolVar(&f.Local, "local", false, "read `make run`'s emulators instead of a deployed stack")
	fs.StringVar(&f.Name, "name", devstack.DefaultName, "-local: the local stack's name")
	fs.StringVar(&f.Endpoint, "endpoint", fmt.Sprintf("http://127.0.0.1:%d", devstack.GetenvInt("MOTO_PORT", 4566)), "-local: moto's endpoint (env MOTO_PORT)")
	fs.StringVar(&f.LogFile, "log-file", devstack.Getenv("LOG_FILE", devstack.DefaultLogFile), "-local: the functions' log `make run` writes, searched for an event id (env LOG_FILE)")
	fs.DurationVar(&f.Since, "since", 14*24*time.Hour, "deployed: how far back Logs Insights searches the ingest log group for an event id and the worker log group for its attempts")
	fs.StringVar(&f.DynamoDBEndpoint, "dynamodb-endpoint", fmt.Sprintf("http://127.0.0.1:%d", devstack.GetenvInt("DYNAMODB_PORT", 8000)), "-local: DynamoDB Local's endpoint (env DYNAMODB_PORT; empty: moto's)")
	return f
}

// Deployment returns the AWS configuration and the deployment f names,
// and whether CloudWatch has its queue metrics (a deployed stack on AWS's
// endpoints). -local: make run's emulators with fake credentials, the
// queue URL template taken from tenantID's queue (empty: the first tenant
// onboarded), the functions' log file; deployed: the core stack's outputs
// with the operator's credentials and region. Its ReplayCommand runs as
// printed. It returns an error wrapping inspect.ErrUnknownTenant,
// inspect.ErrNotCoreStack, or a failed call's.
func (f *Flags) Deployment(ctx context.Context, tenantID string) (aws.Config, inspect.Deployment, bool, error) {
	if !f.Local {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return cfg, inspect.Deployment{}, false, fmt.Errorf("aws config: %w", err)
		}
		d, err := inspect.FromStack(ctx, cloudformation.NewFromConfig(cfg), f.Stack)
		if err != nil {
			return cfg, d, false, err
		}
		d.IngestLogSince = f.Since
		d.ReplayCommand = "go run ./scripts/replay -stack " + f.Stack + " -tenant {tenant} -conversation {conversation} redrive"
		return cfg, d, aws.ToString(cfg.BaseEndpoint) == "", nil
	}
	cfg, err := emulator.AWSConfig(ctx, f.Endpoint, f.DynamoDBEndpoint)
	if err != nil {
		return cfg, inspect.Deployment{}, false, err
	}
	if tenantID == "" {
		ids, err := tenant.NewSSM(ssm.NewFromConfig(cfg), devstack.Stores(f.Name).ParameterPrefix).IDs(ctx)
		if err != nil {
			return cfg, inspect.Deployment{}, false, fmt.Errorf("tenants of %s at %s: %w (is `make run` running?)", f.Name, f.Endpoint, err)
		}
		if len(ids) == 0 {
			return cfg, inspect.Deployment{}, false, fmt.Errorf("%w: no tenant is onboarded on %s at %s (is `make run` running?)", inspect.ErrUnknownTenant, f.Name, f.Endpoint)
		}
		tenantID = slices.Min(ids)
	}
	d, err := devstack.Inspected(ctx, cfg, f.Name, tenantID)
	if err != nil {
		return cfg, d, false, err
	}
	d.IngestLogFile = f.LogFile
	d.ReplayCommand = "make replay TENANT={tenant} CONVERSATION={conversation} ACTION=redrive" + makeVars(f.Endpoint)
	return cfg, d, false, nil
}

// makeVars is what make replay must be told of moto's endpoint beside
// make run's default, so the printed command runs as printed.
func makeVars(endpoint string) string {
	if port := strings.TrimPrefix(endpoint, "http://127.0.0.1:"); port != endpoint && port != "4566" {
		return " MOTO_PORT=" + port
	}
	return ""
}
