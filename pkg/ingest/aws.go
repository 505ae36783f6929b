package ingest

import (
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// Settings are the deployment's knobs, read from the environment by the
// Lambda main and set directly by the local stack.
type Settings struct {
	IdempotencyTable string
	ParameterPrefix  string
	QueueURLTemplate string
	// Retention is the dedup window; Lease the in-flight claim lease.
	Retention, Lease time.Duration
	// TenantCacheTTL is how long a warm instance trusts fetched credentials.
	TenantCacheTTL time.Duration
}

// NewAWS wires a handler to DynamoDB, SQS and SSM clients built from cfg.
// Clients are built once, here; nothing calls AWS until the first request.
func NewAWS(cfg aws.Config, s Settings, logger *slog.Logger) *Handler {
	creds := tenant.NewSSM(ssm.NewFromConfig(cfg), s.ParameterPrefix)
	return New(Config{
		Providers:        provider.Registry(),
		Tenants:          tenant.NewCache(creds.Inbound, s.TenantCacheTTL, 0, nil),
		Claims:           idempotency.NewDynamoDB(dynamodb.NewFromConfig(cfg), s.IdempotencyTable, idempotency.Options{Retention: s.Retention, Lease: s.Lease}),
		Queue:            queue.NewSQS(sqs.NewFromConfig(cfg)),
		QueueURLTemplate: s.QueueURLTemplate,
		Logger:           logger,
	})
}
