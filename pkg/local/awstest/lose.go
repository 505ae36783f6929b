package awstest

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// LostAnswers loses the answers of requests the emulator applied, as a
// connection reset after the server wrote does: the SDK's retryer then
// sends the same request again, and the caller sees the retry's answer.
// Its zero value loses nothing; it is safe for concurrent use.
type LostAnswers struct {
	mu sync.Mutex
	n  int
	// Lost counts the answers lost so far.
	lost int
}

// Lose makes each of the next n requests lose its first answer.
func (l *LostAnswers) Lose(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n += n
}

// Lost returns how many answers were lost.
func (l *LostAnswers) Lost() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Pending returns how many answers are still to be lost.
func (l *LostAnswers) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Install returns cfg with the loss added; clients built from it lose
// answers when told to (Lose).
func (l *LostAnswers) Install(cfg aws.Config) aws.Config {
	cfg.APIOptions = append(append([]func(*middleware.Stack) error{}, cfg.APIOptions...), func(s *middleware.Stack) error {
		// Once per request: whether its first answer is lost.
		err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("chooseLostAnswer",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if l.take() {
					lose := &atomic.Bool{}
					lose.Store(true)
					ctx = context.WithValue(ctx, loseKey{}, lose)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		if err != nil {
			return err
		}
		// After the retry middleware: every attempt passes here.
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("loseAnswer",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				if lose, _ := ctx.Value(loseKey{}).(*atomic.Bool); lose == nil || !lose.CompareAndSwap(true, false) {
					return out, md, err
				}
				// The request landed; its answer is lost on the way back.
				return middleware.FinalizeOutput{}, md, &smithyhttp.RequestSendError{
					Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
			}), middleware.After)
	})
	return cfg
}

type loseKey struct{}

// take reports whether this answer is to be lost.
func (l *LostAnswers) take() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return false
	}
	l.n--
	l.lost++
	return true
}
