// Package runtimeapi runs a Lambda function binary the way the provided.al2023
// runtime does, without Docker or the SAM CLI: it serves the Lambda Runtime
// API (the /2018-06-01/runtime endpoints the aws-lambda-go runtime polls) on
// a loopback port, starts the binary with AWS_LAMBDA_RUNTIME_API pointing at
// it, hands it one event and returns the function's response. It measures
// the init time (process start to first poll for work) and the invoke
// duration, as Lambda reports them in its REPORT line.
package runtimeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Result is one invocation's outcome.
type Result struct {
	// Payload is the function's response (JSON).
	Payload json.RawMessage
	// Error is set when the function reported an invocation or init error.
	Error *FunctionError
	// Init is the time from process start to its first request for work.
	Init time.Duration
	// Duration is the time from handing over the event to the response.
	Duration time.Duration
}

// FunctionError is an error the function reported to the runtime API.
type FunctionError struct {
	Message string `json:"errorMessage"`
	Type    string `json:"errorType"`
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// Options describe one invocation.
type Options struct {
	// Binary is the function's bootstrap built for this machine.
	Binary string
	// Env is the function's environment (KEY=VALUE), added to a minimal
	// Lambda-like base environment.
	Env []string
	// Event is the invocation payload.
	Event []byte
	// Timeout is the function timeout (the deadline the function sees).
	Timeout time.Duration
	// Stdout and Stderr receive the function's logs (default: discarded).
	Stdout, Stderr io.Writer
}

// Invoke runs Binary for one event and stops it.
func Invoke(ctx context.Context, o Options) (Result, error) {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, err
	}
	api := &runtimeAPI{event: o.Event, timeout: o.Timeout, polled: make(chan time.Time, 1), done: make(chan struct{})}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	cmd := exec.CommandContext(ctx, o.Binary)
	cmd.Env = append([]string{
		"AWS_LAMBDA_RUNTIME_API=" + l.Addr().String(),
		"AWS_LAMBDA_FUNCTION_NAME=" + "local",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_REGION=us-east-1",
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
	}, o.Env...)
	cmd.Stdout, cmd.Stderr = orDiscard(o.Stdout), orDiscard(o.Stderr)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()

	var res Result
	select {
	case t := <-api.polled:
		res.Init = t.Sub(start)
	case err := <-exited:
		exited <- err
		if api.initErr != nil {
			return Result{Error: api.initErr}, nil
		}
		return Result{}, fmt.Errorf("%s exited during init: %v", o.Binary, err)
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	select {
	case <-api.done:
	case err := <-exited:
		exited <- err
		return Result{}, fmt.Errorf("%s exited during the invocation: %v", o.Binary, err)
	case <-time.After(o.Timeout + time.Second):
		return Result{}, fmt.Errorf("function timed out after %s", o.Timeout)
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	res.Payload, res.Error, res.Duration = api.payload, api.fnErr, api.finished.Sub(api.handed)
	return res, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// runtimeAPI serves one invocation, then holds further polls open.
type runtimeAPI struct {
	event   []byte
	timeout time.Duration
	polled  chan time.Time
	done    chan struct{}

	mu       sync.Mutex
	served   bool
	handed   time.Time
	finished time.Time
	payload  json.RawMessage
	fnErr    *FunctionError
	initErr  *FunctionError
}

const (
	requestID = "00000000-0000-4000-8000-000000000001"
	prefix    = "/2018-06-01/runtime/"
)

func (a *runtimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, prefix)
	switch {
	case r.Method == http.MethodGet && path == "invocation/next":
		a.mu.Lock()
		first := !a.served
		a.served = true
		if first {
			a.handed = time.Now()
		}
		a.mu.Unlock()
		if !first {
			<-r.Context().Done() // one event per run: hold the poll until shutdown
			return
		}
		select {
		case a.polled <- time.Now():
		default:
		}
		deadline := time.Now().Add(a.timeout)
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", requestID)
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(deadline.UnixMilli(), 10))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:local")
		w.Header().Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000001")
		_, _ = w.Write(a.event)
	case r.Method == http.MethodPost && path == "invocation/"+requestID+"/response":
		b, _ := io.ReadAll(r.Body)
		a.finish(b, nil)
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodPost && path == "invocation/"+requestID+"/error":
		a.finish(nil, decodeErr(r.Body))
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodPost && path == "init/error":
		a.mu.Lock()
		a.initErr = decodeErr(r.Body)
		a.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	default:
		http.Error(w, "unknown runtime API path", http.StatusNotFound)
	}
}

func (a *runtimeAPI) finish(payload []byte, fnErr *FunctionError) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.finished.IsZero() {
		return
	}
	a.finished, a.payload, a.fnErr = time.Now(), payload, fnErr
	close(a.done)
}

func decodeErr(r io.Reader) *FunctionError {
	var e FunctionError
	if err := json.NewDecoder(r).Decode(&e); err != nil {
		e = FunctionError{Type: "Unknown", Message: errors.Join(errors.New("undecodable error payload"), err).Error()}
	}
	return &e
}
