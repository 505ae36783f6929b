// Command ingest is the webhook receiving Lambda (API Gateway HTTP API,
// payload format 2.0). It only wires: read the environment, build the
// handler once, start the Lambda runtime. See package ingest.
package main

import (
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/ingest"
	"github.com/hookpack/hookpack/pkg/lambdaenv"
)

func main() {
	logger := lambdaenv.Logger()
	var env lambdaenv.Env
	s := ingest.Settings{
		IdempotencyTable:  env.Required("IDEMPOTENCY_TABLE"),
		ParameterPrefix:   env.Required("TENANT_PARAMETER_PREFIX"),
		QueueURLTemplate:  env.Required("QUEUE_URL_TEMPLATE"),
		PayloadBucket:     env.Optional("PAYLOAD_BUCKET"), // bodies over SQS's 1 MiB go there
		Retention:         env.Duration("IDEMPOTENCY_RETENTION"),
		TenantCacheTTL:    env.Duration("TENANT_CACHE_TTL"),
		TenantListRefresh: env.Duration("TENANT_LIST_REFRESH"),
	}
	lambdaenv.Start(logger, &env, func(cfg aws.Config) any { return ingest.NewAWS(cfg, s, logger).Handle })
}
