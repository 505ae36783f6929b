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
	// TenantListRefresh is how often a warm instance reloads the list of
	// onboarded tenants (tenant.DefaultRefresh when zero): a new tenant is
	// served within it.
	TenantListRefresh time.Duration
}

// NewAWS wires a handler to DynamoDB, SQS and SSM clients built from cfg.
// Clients are built once, here; nothing calls AWS until the first request,
// which loads the list of onboarded tenants (one SSM request, again every
// TenantListRefresh); ids not on it are answered 404 without an AWS call.
func NewAWS(cfg aws.Config, s Settings, logger *slog.Logger) *Handler {
	creds := tenant.NewSSM(ssm.NewFromConfig(cfg), s.ParameterPrefix)
	return New(Config{
		Providers:        provider.Registry(),
		Tenants:          tenant.NewDirectory(creds.IDs, tenant.NewCache(creds.Inbound, s.TenantCacheTTL, 0, nil), s.TenantListRefresh, nil),
		Claims:           idempotency.NewDynamoDB(dynamodb.NewFromConfig(cfg), s.IdempotencyTable, idempotency.Options{Retention: s.Retention, Lease: s.Lease}),
		Queue:            queue.NewSQS(sqs.NewFromConfig(cfg)),
		QueueURLTemplate: s.QueueURLTemplate,
		Logger:           logger,
	})
}
