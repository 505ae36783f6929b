// Package awscount counts the AWS requests an SDK client makes, by
// "Service.Operation", with a Finalize-step middleware: every HTTP attempt
// is counted, retries included (NewCalls counts each API call once). The request budgets of the ingest and
// worker paths are held by tests built on it, and `make cost` prices what
// it counts.
package awscount

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmw "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Requests counts requests. It is safe for concurrent use.
type Requests struct {
	mu sync.Mutex
	n  map[string]int
	// calls counts each API call once, whatever its retries (NewCalls).
	calls bool
}

// New returns an empty counter of HTTP attempts, retries included.
func New() *Requests { return &Requests{n: map[string]int{}} }

// NewCalls returns an empty counter of API calls: each call counts once,
// however many attempts the SDK's retryer made (an emulator's dropped
// connection is retried). For budgets on what the code asks, not on what
// a flaky transport costs.
func NewCalls() *Requests { return &Requests{n: map[string]int{}, calls: true} }

// Install returns cfg with the counting middleware added; clients built
// from the result are counted, cfg itself is left as it was.
func (r *Requests) Install(cfg aws.Config) aws.Config {
	count := func(ctx context.Context) {
		r.mu.Lock()
		r.n[awsmw.GetServiceID(ctx)+"."+awsmw.GetOperationName(ctx)]++
		r.mu.Unlock()
	}
	cfg.APIOptions = append(append([]func(*middleware.Stack) error{}, cfg.APIOptions...), func(s *middleware.Stack) error {
		if r.calls {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("countCalls",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					count(ctx)
					return next.HandleInitialize(ctx, in)
				}), middleware.After)
		}
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("countRequests",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				count(ctx)
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
	return cfg
}

// Take returns the counts so far and resets them.
func (r *Requests) Take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = map[string]int{}
	return n
}
