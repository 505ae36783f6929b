package ingest

import (
	"context"
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
	// PayloadBucket, when set, takes event bodies too large for SQS
	// (queue.Payloads); without it they are refused with 413.
	PayloadBucket string
	// Retention is the dedup window.
	Retention time.Duration
	// TenantCacheTTL is how long a warm instance trusts fetched credentials.
	TenantCacheTTL time.Duration
	// TenantListRefresh is how often a warm instance reloads the list of
	// onboarded tenants (tenant.DefaultRefresh when zero): a new tenant is
	// served within it.
	TenantListRefresh time.Duration
}

// MaxLambdaBodyBytes is the largest body that can reach the function: a
// synchronous Lambda invocation carries at most 6 MB (the whole API
// Gateway event, so less for a base64 body); API Gateway refuses larger
// requests itself.
const MaxLambdaBodyBytes = 6 << 20

// NewAWS wires a handler to DynamoDB, SQS and SSM clients built from cfg.
// Clients are built once, here; nothing calls AWS until the first request,
// which loads the list of onboarded tenants (one SSM request, again every
// TenantListRefresh); ids not on it are answered 404 without an AWS call.
func NewAWS(cfg aws.Config, s Settings, logger *slog.Logger) *Handler {
	creds := tenant.NewSSM(ssm.NewFromConfig(cfg), s.ParameterPrefix)
	providers := provider.Registry()
	inbound := func(ctx context.Context, id string) (tenant.Inbound, error) { return creds.Inbound(ctx, id, providers) }
	q := queue.NewSQS(sqs.NewFromConfig(cfg))
	var maxBody, maxEvent int // defaults: what SQS takes inline
	if s.PayloadBucket != "" {
		q.Offload = queue.NewPayloads(queue.NewS3(cfg), s.PayloadBucket)
		maxBody, maxEvent = MaxLambdaBodyBytes, queue.MaxOffloadBytes
	}
	return New(Config{
		Providers:        providers,
		Tenants:          tenant.NewDirectory(creds.IDs, tenant.NewCache(inbound, s.TenantCacheTTL, 0, nil), s.TenantListRefresh, nil),
		Claims:           idempotency.NewDynamoDB(dynamodb.NewFromConfig(cfg), s.IdempotencyTable, idempotency.Options{Retention: s.Retention}),
		Queue:            q,
		MaxBodyBytes:     maxBody,
		MaxEventBytes:    maxEvent,
		QueueURLTemplate: s.QueueURLTemplate,
		Logger:           logger,
	})
}
