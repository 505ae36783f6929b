package worker

import (
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsratelimit "github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/ratelimit"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// Settings are the deployment's knobs, read from the environment by the
// Lambda main and set directly by the local stack.
type Settings struct {
	LedgerTable      string
	ParameterPrefix  string
	QueueURLTemplate string
	// PayloadBucket is where ingest offloads bodies too large for SQS
	// (queue.Payloads); pointers to any other bucket are refused.
	PayloadBucket string
	// LedgerRetention is how long completed effects are remembered.
	LedgerRetention time.Duration
	// TenantCacheTTL is how long a warm instance trusts fetched credentials.
	TenantCacheTTL time.Duration
	// RetryBase and RetryMax shape the transient-failure backoff.
	RetryBase, RetryMax time.Duration
	// SafetyMargin is kept free before the Lambda deadline.
	SafetyMargin time.Duration
	// MaxAttempts dead-letters transient failures at this receive count
	// (0: leave it to the queue's maxReceiveCount).
	MaxAttempts int
	// CompleteEffects writes the forward's completion too (Config.CompleteEffects).
	CompleteEffects bool
	// EffectTimeout bounds each custom effect (Config.EffectTimeout).
	EffectTimeout time.Duration
	// QueueRetention and ExpiryMargin: see Config.
	QueueRetention, ExpiryMargin time.Duration
	// AutoPause pauses a destination that failed this long without a
	// success (Config.AutoPause; 0: DefaultAutoPause).
	AutoPause time.Duration
	// PausePoll bounds the poll of a destination paused less than a
	// minute ago (Config.PausePoll; 0: destination.Poll), and DestinationCacheTTL is how long an instance
	// trusts the destinations' states (0: destination.DefaultCacheTTL);
	// make run sets both short, the deployed worker keeps the defaults.
	PausePoll, DestinationCacheTTL time.Duration
}

// noRetryQuota gives the ledger's client the standard retries without the
// client-wide retry quota: after a burst of errors the quota refuses
// further retries for a while, and a completion write refused that way
// makes a custom effect that ran count as not done.
func noRetryQuota(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.RateLimiter = awsratelimit.None })
}

// NewAWS wires a handler to DynamoDB, SQS and SSM clients built from cfg.
// Every event is forwarded to its tenant's target (Forward) unless a
// register function adds more specific handlers:
//
//	worker.NewAWS(cfg, s, logger, func(r *worker.Registry) {
//		r.Handle("stripe", "invoice.paid", markPaid)
//	})
//
// Clients are built once, here; nothing calls AWS until the first batch.
func NewAWS(cfg aws.Config, s Settings, logger *slog.Logger, register ...func(*Registry)) *Handler {
	sqsClient := sqs.NewFromConfig(cfg)
	creds := tenant.NewSSM(ssm.NewFromConfig(cfg), s.ParameterPrefix)
	reg := NewRegistry()
	reg.HandleForward(Forward(tenant.NewCache(creds.Outbound, s.TenantCacheTTL, 0, nil), forward.New(nil, nil)))
	for _, f := range register {
		f(reg)
	}
	var payloads payloadReader
	if s.PayloadBucket != "" {
		payloads = queue.NewPayloads(queue.NewS3(cfg), s.PayloadBucket)
	}
	ddb := dynamodb.NewFromConfig(cfg, noRetryQuota)
	return New(Config{
		Payloads: payloads,
		Ledger:   ledger.NewDynamoDB(ddb, s.LedgerTable, ledger.Options{Retention: s.LedgerRetention}),
		// Rate limits live in the ledger table (limit#… items); one store
		// per instance remembers them between its invocations.
		Limiter: ratelimit.NewDynamoDB(ddb, s.LedgerTable, ratelimit.Options{}),
		// So do the destinations' pauses (a destinations#… item per
		// tenant), read at most once per tenant and DestinationCacheTTL.
		Destinations:     destination.NewCache(destination.NewDynamoDB(ddb, s.LedgerTable), s.DestinationCacheTTL, nil),
		AutoPause:        s.AutoPause,
		PausePoll:        s.PausePoll,
		Handlers:         reg,
		DLQ:              queue.NewSQS(sqsClient),
		Visibility:       sqsClient,
		Queues:           sqsClient,
		QueueURLTemplate: s.QueueURLTemplate,
		Retry:            Retry{Base: s.RetryBase, Max: s.RetryMax},
		SafetyMargin:     s.SafetyMargin,
		MaxAttempts:      s.MaxAttempts,
		CompleteEffects:  s.CompleteEffects,
		EffectTimeout:    s.EffectTimeout,
		QueueRetention:   s.QueueRetention,
		LedgerRetention:  s.LedgerRetention,
		ExpiryMargin:     s.ExpiryMargin,
		Logger:           logger,
	})
}
