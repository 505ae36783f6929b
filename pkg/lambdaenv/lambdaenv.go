// Package lambdaenv reads a Lambda function's configuration from its
// environment, for the tiny mains under functions/: the log level Lambda
// passes, required names, and durations. Errors name the variable, never
// its value's secrets (functions take no secrets from the environment).
package lambdaenv

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
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

// Required sets each destination to its variable's value and returns an
// error naming every variable that is unset or empty.
func Required(vars map[string]*string) error {
	var missing []string
	for name, dst := range vars {
		if *dst = os.Getenv(name); *dst == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%s required", strings.Join(missing, ", "))
	}
	return nil
}

// Durations sets each destination whose variable is set to its value, a Go
// duration ("30s", "168h"); unset variables leave the default in place.
func Durations(vars map[string]*time.Duration) error {
	for name, dst := range vars {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("%s: want a non-negative duration such as 30s, got %q", name, v)
		}
		*dst = d
	}
	return nil
}

// Count sets *dst to the variable's value, a non-negative integer, when it
// is set.
func Count(name string, dst *int) error {
	v := os.Getenv(name)
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("%s: want a non-negative integer, got %q", name, v)
	}
	*dst = n
	return nil
}

// Bool sets *dst to the variable's value, "true" or "false", when it is set.
func Bool(name string, dst *bool) error {
	switch v := os.Getenv(name); v {
	case "":
	case "true", "false":
		*dst = v == "true"
	default:
		return fmt.Errorf("%s: want true or false, got %q", name, v)
	}
	return nil
}
