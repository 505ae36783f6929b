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
	// n requests are to lose their first answer, every of them all of
	// theirs; lost counts the answers lost so far.
	n, every, lost int
}

// Lose makes each of the next n requests lose its first answer.
func (l *LostAnswers) Lose(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n += n
}

// LoseEvery makes each of the next n requests lose the answers of all its
// tries: the caller gets the SDK's error, though the request landed.
func (l *LostAnswers) LoseEvery(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.every += n
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
	return l.n + l.every
}

// Install returns cfg with the loss added; clients built from it lose
// answers when told to (Lose).
func (l *LostAnswers) Install(cfg aws.Config) aws.Config {
	cfg.APIOptions = append(append([]func(*middleware.Stack) error{}, cfg.APIOptions...), func(s *middleware.Stack) error {
		// Once per request: whether its first answer is lost.
		err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("chooseLostAnswer",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if lose := l.take(); lose != nil {
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
				if lose, _ := ctx.Value(loseKey{}).(*loss); lose == nil || !lose.every && !lose.first.CompareAndSwap(false, true) {
					return out, md, err
				}
				l.mu.Lock()
				l.lost++
				l.mu.Unlock()
				// The request landed; its answer is lost on the way back.
				return middleware.FinalizeOutput{}, md, &smithyhttp.RequestSendError{
					Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
			}), middleware.After)
	})
	return cfg
}

type loseKey struct{}

// loss is the answers one request loses: every one, or its first.
type loss struct {
	every bool
	first atomic.Bool // lost already
}

// take returns the loss of the request about to be sent, or nil.
func (l *LostAnswers) take() *loss {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.every > 0:
		l.every--
		return &loss{every: true}
	case l.n > 0:
		l.n--
		return &loss{}
	}
	return nil
}
