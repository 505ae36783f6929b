// Command ingest is the webhook receiving Lambda (API Gateway HTTP API,
// payload format 2.0). It only wires: read the environment, build the
// handler once, start the Lambda runtime. See package ingest.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/hookpack/hookpack/pkg/ingest"
	"github.com/hookpack/hookpack/pkg/lambdaenv"
)

func main() {
	logger := lambdaenv.Logger()
	var s ingest.Settings
	err := lambdaenv.Required(map[string]*string{
		"IDEMPOTENCY_TABLE":       &s.IdempotencyTable,
		"TENANT_PARAMETER_PREFIX": &s.ParameterPrefix,
		"QUEUE_URL_TEMPLATE":      &s.QueueURLTemplate,
	})
	if err == nil {
		err = lambdaenv.Durations(map[string]*time.Duration{
			"IDEMPOTENCY_RETENTION": &s.Retention,
			"IDEMPOTENCY_LEASE":     &s.Lease,
			"TENANT_CACHE_TTL":      &s.TenantCacheTTL,
			"TENANT_LIST_REFRESH":   &s.TenantListRefresh,
		})
	}
	s.PayloadBucket = os.Getenv("PAYLOAD_BUCKET") // optional: bodies over SQS's 1 MiB go there
	if err != nil {
		logger.Error("invalid configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		logger.Error("aws config", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(ingest.NewAWS(cfg, s, logger).Handle)
}
