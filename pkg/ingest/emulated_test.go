package ingest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// emulated is what the ingest of one deployment reads and writes, on the
// emulators and named after the test: an idempotency table, tenant acme's
// queue pair (other tenants' queue URLs follow its name) and the tenants'
// credentials under /<name>.
type emulated struct {
	cfg  aws.Config // moto
	name string
	ddb  *dynamodb.Client
	sqs  *sqs.Client
	pair provision.Pair
}

// emulate provisions it: the table on claims (moto's or DynamoDB Local's
// endpoint), the queues with maxReceive receives before the DLQ.
func emulate(tb testing.TB, claims string, maxReceive int, tenants map[string]tenant.Inbound) emulated {
	tb.Helper()
	ctx := context.Background()
	e := emulated{cfg: awstest.Config(tb, awstest.Moto(tb)), name: awstest.Name(tb)}
	e.ddb, e.sqs = dynamodb.NewFromConfig(awstest.Config(tb, claims)), sqs.NewFromConfig(e.cfg)
	if err := provision.Idempotency(ctx, e.ddb, e.name); err != nil {
		tb.Fatal(err)
	}
	var err error
	if e.pair, err = provision.QueuePair(ctx, e.sqs, e.name+"-acme", provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: maxReceive}); err != nil {
		tb.Fatal(err)
	}
	creds := e.credentials()
	for id, in := range tenants {
		if err := creds.Put(ctx, id, in, tenant.Outbound{}, "", provider.Registry()); err != nil {
			tb.Fatal(err)
		}
	}
	return e
}

func (e emulated) credentials() *tenant.SSM {
	return tenant.NewSSM(ssm.NewFromConfig(e.cfg), "/"+e.name)
}

// settings are the handler's for this deployment, with acme's queue URL as
// the template (one tenant).
func (e emulated) settings() Settings {
	return Settings{IdempotencyTable: e.name, ParameterPrefix: "/" + e.name, QueueURLTemplate: e.pair.URL}
}
