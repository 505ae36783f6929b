// Command watch is the core stack's scheduled alerting (every 5 minutes):
// it looks at every tenant's queue and dead-letter queue and publishes a
// notification naming the tenant (and a paused destination) to the alarm
// topic when one of its rules is breached. It only wires: read the environment, build the watcher
// once, start the Lambda runtime. See package watch.
package main

import (
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/lambdaenv"
	"github.com/hookpack/hookpack/pkg/watch"
)

func main() {
	logger := lambdaenv.Logger()
	var env lambdaenv.Env
	s := watch.Settings{
		Stack:            env.Required("STACK_NAME"),
		QueueURLTemplate: env.Required("QUEUE_URL_TEMPLATE"),
		StateTable:       env.Required("STATE_TABLE"),
		LedgerTable:      env.Required("LEDGER_TABLE"), // the destinations' pauses
		TopicARN:         env.Required("ALARM_TOPIC_ARN"),
		OldestMessage:    env.Duration("OLDEST_MESSAGE_THRESHOLD"),
		DeadLetterExpiry: env.Duration("DEAD_LETTER_EXPIRY"),
	}
	prefix := env.Required("TENANT_PARAMETER_PREFIX")
	lambdaenv.Start(logger, &env, func(cfg aws.Config) any { return watch.NewAWS(cfg, s, prefix, nil, logger).Handle })
}
