// Package lambdaenv starts the tiny mains under functions/: it reads a
// function's configuration from its environment, reporting every bad
// variable at once, builds the JSON logger at the level Lambda passes, loads
// the AWS configuration and runs the Lambda runtime. Errors name the
// variable and the value (functions take no secrets from the environment).
package lambdaenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Logger returns the JSON logger every function writes its one line per
// request or message with, at the level Lambda sets in AWS_LAMBDA_LOG_LEVEL
// from the function's ApplicationLogLevel (INFO when unset or not a slog
// level, e.g. TRACE or FATAL). Lines below the level are never formatted.
func Logger() *slog.Logger {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(os.Getenv("AWS_LAMBDA_LOG_LEVEL")))
	return slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level}))
}

// Env reads variables and keeps every error, so a misconfigured function
// names all its bad variables in one log line. Unset optional variables
// read as the zero value, which the settings' consumers replace by their
// defaults.
type Env struct{ errs []error }

// Required returns the variable's value and records an error when it is
// unset or empty.
func (e *Env) Required(name string) string {
	v := os.Getenv(name)
	if v == "" {
		e.errs = append(e.errs, fmt.Errorf("%s required", name))
	}
	return v
}

// Optional returns the variable's value, empty when it is unset.
func (e *Env) Optional(name string) string { return os.Getenv(name) }

// Duration returns the variable's value, a non-negative Go duration ("30s",
// "168h"), or 0 when it is unset.
func (e *Env) Duration(name string) time.Duration {
	return nonNegative(e, name, time.ParseDuration, "a non-negative duration such as 30s")
}

// Count returns the variable's value, a non-negative integer, or 0 when it
// is unset.
func (e *Env) Count(name string) int {
	return nonNegative(e, name, strconv.Atoi, "a non-negative integer")
}

// nonNegative returns the variable's value read by parse, or 0 when it is
// unset; a value parse rejects or a negative one records an error saying
// what was wanted, and reads as what parse made of it, at least 0.
func nonNegative[T time.Duration | int](e *Env, name string, parse func(string) (T, error), want string) T {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	n, err := parse(v)
	if err != nil || n < 0 {
		e.errs = append(e.errs, fmt.Errorf("%s: want %s, got %q", name, want, v))
	}
	return max(n, 0)
}

// Bool returns the variable's value, "true" or "false", or false when it is
// unset.
func (e *Env) Bool(name string) bool {
	switch v := os.Getenv(name); v {
	case "", "false":
		return false
	case "true":
		return true
	default:
		e.errs = append(e.errs, fmt.Errorf("%s: want true or false, got %q", name, v))
		return false
	}
}

// Err joins every error recorded so far, in the order read.
func (e *Env) Err() error { return errors.Join(e.errs...) }

// Start runs the Lambda runtime with the handler newHandler builds from
// the default AWS configuration. A configuration error in env or in the AWS
// configuration is logged and ends the process before the runtime starts,
// so the function's init fails with the reason in its log.
func Start(logger *slog.Logger, env *Env, newHandler func(aws.Config) any) {
	err := env.Err()
	var cfg aws.Config
	if err == nil {
		cfg, err = config.LoadDefaultConfig(context.Background())
		cfg.APIOptions = append(cfg.APIOptions, AcceptMissingCRC32)
	}
	if err != nil {
		logger.Error("invalid configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(newHandler(cfg))
}
