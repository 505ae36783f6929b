// Command worker is the queue-consuming Lambda (SQS FIFO event source
// mappings with ReportBatchItemFailures, one per tenant queue). It only
// wires: read the environment, build the handler once, start the Lambda
// runtime. See package worker.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/hookpack/hookpack/pkg/lambdaenv"
	"github.com/hookpack/hookpack/pkg/worker"
)

func main() {
	logger := lambdaenv.Logger() // DEBUG adds a line for each message the worker did
	var s worker.Settings
	err := lambdaenv.Required(map[string]*string{
		"LEDGER_TABLE":            &s.LedgerTable,
		"TENANT_PARAMETER_PREFIX": &s.ParameterPrefix,
		"QUEUE_URL_TEMPLATE":      &s.QueueURLTemplate,
	})
	if err == nil {
		err = lambdaenv.Count("MAX_ATTEMPTS", &s.MaxAttempts)
	}
	if err == nil {
		err = lambdaenv.Bool("COMPLETE_EFFECTS", &s.CompleteEffects)
	}
	if err == nil {
		err = lambdaenv.Durations(map[string]*time.Duration{
			"LEDGER_RETENTION":   &s.LedgerRetention,
			"TENANT_CACHE_TTL":   &s.TenantCacheTTL,
			"RETRY_BASE_DELAY":   &s.RetryBase,
			"RETRY_MAX_DELAY":    &s.RetryMax,
			"WORK_SAFETY_MARGIN": &s.SafetyMargin,
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
	lambda.Start(worker.NewAWS(cfg, s, logger).Handle)
}
