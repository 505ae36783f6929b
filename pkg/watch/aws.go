package watch

import (
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go/transport/http/protocol/awsjson"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// NewAWS returns a Watcher on the AWS clients of cfg, listing the tenants
// onboarded under parameterPrefix ("/<stack>": its tenant-ids parameters),
// on clock now (nil: time.Now), reading paused destinations from
// s.LedgerTable.
// CloudWatch is spoken in its AWS JSON 1.0 protocol, which CloudWatch
// serves alongside the SDK's default (CBOR) and which moto also speaks, so
// the same binary runs against AWS and the emulators.
func NewAWS(cfg aws.Config, s Settings, parameterPrefix string, now func() time.Time, logger *slog.Logger) *Watcher {
	cw := cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.Protocol = awsjson.New10(schemas.GraniteServiceVersion20100801) })
	ids := tenant.NewSSM(ssm.NewFromConfig(cfg), parameterPrefix).IDs
	ddb := dynamodb.NewFromConfig(cfg)
	var dests destinationStates
	if s.LedgerTable != "" {
		dests = destination.NewDynamoDB(ddb, s.LedgerTable)
	}
	return New(ids, sqs.NewFromConfig(cfg), cw, ddb, sns.NewFromConfig(cfg), dests, s, now, logger)
}
