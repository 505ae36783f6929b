// Package awscount counts the AWS requests an SDK client makes, by
// "Service.Operation", with a Finalize-step middleware: every HTTP attempt
// is counted, retries included. The request budgets of the ingest and
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
}

// New returns an empty counter.
func New() *Requests { return &Requests{n: map[string]int{}} }

// Install returns cfg with the counting middleware added; clients built
// from the result are counted, cfg itself is left as it was.
func (r *Requests) Install(cfg aws.Config) aws.Config {
	cfg.APIOptions = append(append([]func(*middleware.Stack) error{}, cfg.APIOptions...), func(s *middleware.Stack) error {
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("countRequests",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				r.mu.Lock()
				r.n[awsmw.GetServiceID(ctx)+"."+awsmw.GetOperationName(ctx)]++
				r.mu.Unlock()
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
