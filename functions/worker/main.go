// Command worker is the queue-consuming Lambda (SQS FIFO event source
// mappings with ReportBatchItemFailures, one per tenant queue). It only
// wires: read the environment, build the handler once, start the Lambda
// runtime. See package worker.
package main

import (
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/lambdaenv"
	"github.com/hookpack/hookpack/pkg/worker"
)

func main() {
	logger := lambdaenv.Logger() // DEBUG adds a line for each message the worker did
	var env lambdaenv.Env
	s := worker.Settings{
		LedgerTable:      env.Required("LEDGER_TABLE"),
		ParameterPrefix:  env.Required("TENANT_PARAMETER_PREFIX"),
		QueueURLTemplate: env.Required("QUEUE_URL_TEMPLATE"),
		PayloadBucket:    env.Optional("PAYLOAD_BUCKET"), // bodies over SQS's 1 MiB come from there
		LedgerRetention:  env.Duration("LEDGER_RETENTION"),
		TenantCacheTTL:   env.Duration("TENANT_CACHE_TTL"),
		RetryBase:        env.Duration("RETRY_BASE_DELAY"),
		RetryMax:         env.Duration("RETRY_MAX_DELAY"),
		SafetyMargin:     env.Duration("WORK_SAFETY_MARGIN"),
		MaxAttempts:      env.Count("MAX_ATTEMPTS"),
		CompleteEffects:  env.Bool("COMPLETE_EFFECTS"),
		EffectTimeout:    env.Duration("EFFECT_TIMEOUT"),
		QueueRetention:   env.Duration("QUEUE_RETENTION"), // the tenant queues' MessageRetentionPeriod
		ExpiryMargin:     env.Duration("EXPIRY_MARGIN"),
		AutoPause:        env.Duration("AUTO_PAUSE_AFTER"), // a destination failing this long without a success is paused
	}
	lambdaenv.Start(logger, &env, func(cfg aws.Config) any { return worker.NewAWS(cfg, s, logger).Handle })
}
