package console

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// AWSConfig returns the Config of a console over deployment d on the
// clients of cfg: inspect.NewAWS's inspector (with CloudWatch's queue
// metrics when metrics is set: a deployed stack), a replay.Replayer that
// sends with queue.SQS (reading offloaded bodies from d.PayloadBucket),
// the tenants onboarded under d.ParameterPrefix in SSM, and their
// destinations' pauses in the ledger table (package destination).
func AWSConfig(cfg aws.Config, d inspect.Deployment, metrics bool) Config {
	in := inspect.NewAWS(cfg, d, metrics)
	client := sqs.NewFromConfig(cfg)
	var o replay.Options
	if d.PayloadBucket != "" {
		o.Payloads = queue.NewPayloads(queue.NewS3(cfg), d.PayloadBucket)
	}
	ddb := dynamodb.NewFromConfig(cfg)
	tenants := tenant.NewSSM(ssm.NewFromConfig(cfg), d.ParameterPrefix)
	return Config{
		Inspector:        in,
		EffectRuns:       in,
		DeadLetters:      replay.New(client, queue.NewSQS(client), o),
		Tenants:          tenants,
		QueueURLTemplate: d.QueueURLTemplate,
		Pauser:           &destination.Pauser{Outbound: tenants, States: destination.NewDynamoDB(ddb, d.LedgerTable), Now: time.Now},
	}
}
