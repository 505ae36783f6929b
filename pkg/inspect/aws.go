package inspect

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/ratelimit"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// ErrNotCoreStack: the stack lacks an output of the core template.
var ErrNotCoreStack = errors.New("not a hookpack core stack")

// stackAPI reads a stack's outputs and parameters.
type stackAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, opts ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// FromStack returns the deployment of a core stack (template.yaml) from its
// outputs (IdempotencyTableName, LedgerTableName, QueueUrlPattern,
// PayloadBucketName, TenantParameterPrefix), its DedupRetentionHours and
// WorkerMaxAttempts parameters and its ingest and
// worker log groups (named after the stack by template.yaml): one
// DescribeStacks. It returns an error wrapping ErrNotCoreStack when an
// output is missing, or a wrapped AWS error.
func FromStack(ctx context.Context, client stackAPI, name string) (Deployment, error) {
	out, err := client.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		return Deployment{}, fmt.Errorf("describe stack %s: %w", name, err)
	}
	if len(out.Stacks) != 1 {
		return Deployment{}, fmt.Errorf("describe stack %s: %d stacks", name, len(out.Stacks))
	}
	st := out.Stacks[0]
	outputs := map[string]string{}
	for _, o := range st.Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	d := Deployment{
		IdempotencyTable: outputs["IdempotencyTableName"],
		LedgerTable:      outputs["LedgerTableName"],
		QueueURLTemplate: outputs["QueueUrlPattern"],
		PayloadBucket:    outputs["PayloadBucketName"],
		IngestLogGroup:   IngestLogGroup(name),
		WorkerLogGroup:   WorkerLogGroup(name),
		// "/<stack>/tenants": tenant.NewSSM takes the part before "/tenants".
		ParameterPrefix: strings.TrimSuffix(outputs["TenantParameterPrefix"], "/tenants"),
	}
	if n := aws.ToString(st.StackName); n != "" { // name may be a stack id
		d.IngestLogGroup, d.WorkerLogGroup = IngestLogGroup(n), WorkerLogGroup(n)
	}
	for _, need := range []string{"IdempotencyTableName", "LedgerTableName", "QueueUrlPattern"} {
		if outputs[need] == "" {
			return d, fmt.Errorf("%w: stack %s has no output %s (give the core stack, not a tenant stack)", ErrNotCoreStack, name, need)
		}
	}
	for _, p := range st.Parameters {
		n, err := strconv.Atoi(aws.ToString(p.ParameterValue))
		switch {
		case err != nil:
		case aws.ToString(p.ParameterKey) == "DedupRetentionHours":
			d.DedupRetention = time.Duration(n) * time.Hour
		case aws.ToString(p.ParameterKey) == "WorkerMaxAttempts":
			d.MaxAttempts = n
		}
	}
	return d, nil
}

// Providers are the provider names of this build (provider.Registry),
// sorted: the ones a bare event id is tried with and an event key may name.
func Providers() []string { return slices.Sorted(maps.Keys(provider.Registry())) }

// NewAWS returns an inspector of d on the clients of cfg, trying a bare
// event id with every provider of this build. With metrics it reads
// CloudWatch's queue metrics (a deployed stack; a local one has none).
// With d.ParameterPrefix it reads the tenant's outbound configuration from
// SSM (one GetParameter, decrypted; only its destinations' names, filters
// and rates are kept) and their rate limiters from the ledger table.
func NewAWS(cfg aws.Config, d Deployment, metrics bool) *Inspector {
	sqsClient := sqs.NewFromConfig(cfg)
	ddb := dynamodb.NewFromConfig(cfg)
	c := Config{
		Deployment: d,
		Claims:     idempotency.NewDynamoDB(ddb, d.IdempotencyTable, idempotency.Options{Retention: d.DedupRetention}),
		Ledger:     ledger.NewDynamoDB(ddb, d.LedgerTable, ledger.Options{}),
		Queues:     sqsClient,
		Providers:  Providers(),
		Limits:     ratelimit.NewDynamoDB(ddb, d.LedgerTable, ratelimit.Options{}),
		Pauses:     destination.NewDynamoDB(ddb, d.LedgerTable),
	}
	if d.ParameterPrefix != "" {
		c.Outbound = tenant.NewSSM(ssm.NewFromConfig(cfg), d.ParameterPrefix)
	}
	// A listing hides each dead letter for a minute at most (it makes them
	// visible again when done); List never sends, so there is no sender.
	o := replay.Options{Visibility: time.Minute}
	if d.PayloadBucket != "" {
		p := queue.NewPayloads(queue.NewS3(cfg), d.PayloadBucket)
		c.Payloads, o.Payloads = p, p
	}
	c.DeadLetters = replay.New(sqsClient, nil, o)
	if metrics {
		c.Metrics = cloudwatch.NewFromConfig(cfg)
	}
	switch {
	case d.IngestLogFile != "": // the ingest's and the worker's lines
		f := LogFile{Path: d.IngestLogFile}
		c.Logs, c.Runs = f, f
	case d.IngestLogGroup != "":
		logs := cloudwatchlogs.NewFromConfig(cfg)
		c.Logs = &Insights{Client: logs, LogGroup: d.IngestLogGroup, Since: d.IngestLogSince}
		if d.WorkerLogGroup != "" {
			c.Runs = &Insights{Client: logs, LogGroup: d.WorkerLogGroup, Since: d.IngestLogSince}
		}
	}
	return New(c)
}
