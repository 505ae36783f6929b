// Command worker is the queue-consuming Lambda (SQS FIFO event source
// mappings with ReportBatchItemFailures, one per tenant queue). It only
// wires: read the environment, build the handler once, start the Lambda
// runtime. See package worker.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/hookpack/hookpack/pkg/worker"
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
	lambda.Start(worker.NewAWS(cfg, s, logger).Handle)
}

func settings() (worker.Settings, error) {
	s := worker.Settings{
		LedgerTable:      os.Getenv("LEDGER_TABLE"),
		ParameterPrefix:  os.Getenv("TENANT_PARAMETER_PREFIX"),
		QueueURLTemplate: os.Getenv("QUEUE_URL_TEMPLATE"),
	}
	if s.LedgerTable == "" || s.ParameterPrefix == "" || s.QueueURLTemplate == "" {
		return s, fmt.Errorf("LEDGER_TABLE, TENANT_PARAMETER_PREFIX and QUEUE_URL_TEMPLATE are required")
	}
	var err error
	if v := os.Getenv("MAX_ATTEMPTS"); v != "" {
		if s.MaxAttempts, err = strconv.Atoi(v); err != nil || s.MaxAttempts < 0 {
			return s, fmt.Errorf("MAX_ATTEMPTS: want a non-negative integer, got %q", v)
		}
	}
	for name, dst := range map[string]*time.Duration{
		"LEDGER_RETENTION":   &s.LedgerRetention,
		"TENANT_CACHE_TTL":   &s.TenantCacheTTL,
		"RETRY_BASE_DELAY":   &s.RetryBase,
		"RETRY_MAX_DELAY":    &s.RetryMax,
		"WORK_SAFETY_MARGIN": &s.SafetyMargin,
	} {
		if v := os.Getenv(name); v != "" {
			if *dst, err = time.ParseDuration(v); err != nil {
				return s, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return s, nil
}
