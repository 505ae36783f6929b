// Command ingest is the webhook receiving Lambda (API Gateway HTTP API,
// payload format 2.0). It only wires: read the environment, build the
// handler once, start the Lambda runtime. See package ingest.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/hookpack/hookpack/pkg/ingest"
)

func main() {
	// Lambda sets AWS_LAMBDA_LOG_LEVEL from ApplicationLogLevel; lines
	// below it are not even formatted (DEBUG: each message the worker did).
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(os.Getenv("AWS_LAMBDA_LOG_LEVEL"))) // TRACE, FATAL or unset: INFO
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level}))
	s, err := settings()
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

func settings() (ingest.Settings, error) {
	s := ingest.Settings{
		IdempotencyTable: os.Getenv("IDEMPOTENCY_TABLE"),
		ParameterPrefix:  os.Getenv("TENANT_PARAMETER_PREFIX"),
		QueueURLTemplate: os.Getenv("QUEUE_URL_TEMPLATE"),
	}
	if s.IdempotencyTable == "" || s.ParameterPrefix == "" || s.QueueURLTemplate == "" {
		return s, fmt.Errorf("IDEMPOTENCY_TABLE, TENANT_PARAMETER_PREFIX and QUEUE_URL_TEMPLATE are required")
	}
	var err error
	for name, dst := range map[string]*time.Duration{
		"IDEMPOTENCY_RETENTION": &s.Retention,
		"IDEMPOTENCY_LEASE":     &s.Lease,
		"TENANT_CACHE_TTL":      &s.TenantCacheTTL,
		"TENANT_LIST_REFRESH":   &s.TenantListRefresh,
	} {
		if v := os.Getenv(name); v != "" {
			if *dst, err = time.ParseDuration(v); err != nil {
				return s, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return s, nil
}
