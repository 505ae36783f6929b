// Package runtimeapi runs a Lambda function binary the way the provided.al2023
// runtime does, without Docker or the SAM CLI: it serves the Lambda Runtime
// API (the /2018-06-01/runtime endpoints the aws-lambda-go runtime polls) on
// a loopback port, starts the binary with AWS_LAMBDA_RUNTIME_API pointing at
// it and hands it events, one at a time, as one warm Lambda instance gets
// them. It measures the init time (process start to first poll for work)
// and each invoke's duration, as Lambda reports them in its REPORT line.
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

// ErrStopped is returned by Instance.Invoke once the instance has exited or
// was killed at a timeout (Lambda discards such an instance too).
var ErrStopped = errors.New("function instance stopped")

// Options describe a function instance.
type Options struct {
	// Binary is the function's bootstrap built for this machine.
	Binary string
	// Env is the function's environment (KEY=VALUE), added to a minimal
	// Lambda-like base environment.
	Env []string
	// Event is the invocation payload (Invoke only).
	Event []byte
	// Timeout is the function timeout (the deadline the function sees).
	Timeout time.Duration
	// FunctionName and FunctionARN are what the runtime tells the function
	// about itself (default "local" and a placeholder ARN).
	FunctionName, FunctionARN string
	// Stdout and Stderr receive the function's logs (default: discarded).
	Stdout, Stderr io.Writer
}

// Invoke runs Binary for one event and stops it.
func Invoke(ctx context.Context, o Options) (Result, error) {
	in, res, err := start(ctx, o)
	if err != nil || res.Error != nil {
		return res, err
	}
	defer in.Close()
	res, err = in.Invoke(ctx, o.Event)
	res.Init = in.Init
	return res, err
}

// Instance is one running function process: a warm Lambda instance. It
// handles one invocation at a time; Invoke is safe for concurrent use and
// queues callers.
type Instance struct {
	// Init is the time from process start to its first request for work.
	Init time.Duration

	o      Options
	srv    *http.Server
	cmd    *exec.Cmd
	exited chan struct{}
	next   chan *invocation
	busy   sync.Mutex

	mu      sync.Mutex
	seq     int
	current *invocation
	initErr *FunctionError
}

type invocation struct {
	id       string
	event    []byte
	handed   time.Time
	finished time.Time
	payload  json.RawMessage
	fnErr    *FunctionError
	done     chan struct{}
}

// Start starts Binary and waits for its init to finish (its first poll for
// work). A function that reports an init error, or exits during init,
// returns an error naming it.
func Start(ctx context.Context, o Options) (*Instance, error) {
	in, res, err := start(ctx, o)
	if err != nil {
		return nil, err
	}
	if res.Error != nil {
		return nil, fmt.Errorf("%s init failed: %w", o.Binary, res.Error)
	}
	return in, nil
}

func start(ctx context.Context, o Options) (*Instance, Result, error) {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.FunctionName == "" {
		o.FunctionName = "local"
	}
	if o.FunctionARN == "" {
		o.FunctionARN = "arn:aws:lambda:us-east-1:123456789012:function:" + o.FunctionName
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, Result{}, err
	}
	in := &Instance{o: o, exited: make(chan struct{}), next: make(chan *invocation)}
	polled := make(chan time.Time, 1)
	in.srv = &http.Server{Handler: &runtimeAPI{in: in, polled: polled}, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = in.srv.Serve(l) }()

	in.cmd = exec.Command(o.Binary)
	in.cmd.Env = append([]string{
		"AWS_LAMBDA_RUNTIME_API=" + l.Addr().String(),
		"AWS_LAMBDA_FUNCTION_NAME=" + o.FunctionName,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_REGION=us-east-1",
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
	}, o.Env...)
	in.cmd.Stdout, in.cmd.Stderr = orDiscard(o.Stdout), orDiscard(o.Stderr)
	begin := time.Now()
	if err := in.cmd.Start(); err != nil {
		_ = in.srv.Close()
		return nil, Result{}, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	go func() {
		_ = in.cmd.Wait()
		close(in.exited)
	}()
	select {
	case t := <-polled:
		in.Init = t.Sub(begin)
		return in, Result{}, nil
	case <-in.exited:
		in.Close()
		if e := in.takeInitErr(); e != nil {
			return nil, Result{Error: e}, nil
		}
		return nil, Result{}, fmt.Errorf("%s exited during init: %v", o.Binary, in.cmd.ProcessState)
	case <-ctx.Done():
		in.Close()
		return nil, Result{}, ctx.Err()
	}
}

func (in *Instance) takeInitErr() *FunctionError {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.initErr
}

// Invoke hands event to the instance and returns the function's response.
// A function still running at its timeout is killed, as Lambda kills it:
// the error says so, and later calls return ErrStopped.
func (in *Instance) Invoke(ctx context.Context, event []byte) (Result, error) {
	in.busy.Lock()
	defer in.busy.Unlock()
	in.mu.Lock()
	in.seq++
	inv := &invocation{id: fmt.Sprintf("00000000-0000-4000-8000-%012d", in.seq), event: event, done: make(chan struct{})}
	in.mu.Unlock()
	select {
	case in.next <- inv:
	case <-in.exited:
		return Result{}, ErrStopped
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	select {
	case <-inv.done:
	case <-in.exited:
		return Result{}, fmt.Errorf("%s exited during the invocation: %w", in.o.Binary, ErrStopped)
	case <-time.After(in.o.Timeout + time.Second):
		in.Close()
		return Result{}, fmt.Errorf("function timed out after %s", in.o.Timeout)
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return Result{Payload: inv.payload, Error: inv.fnErr, Duration: inv.finished.Sub(inv.handed)}, nil
}

// Close kills the process and stops serving the runtime API.
func (in *Instance) Close() {
	if in.cmd.Process != nil {
		_ = in.cmd.Process.Kill()
		<-in.exited
	}
	_ = in.srv.Close()
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// runtimeAPI serves an instance's invocations, one at a time.
type runtimeAPI struct {
	in     *Instance
	polled chan time.Time
}

const prefix = "/2018-06-01/runtime/"

func (a *runtimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in := a.in
	path := strings.TrimPrefix(r.URL.Path, prefix)
	switch {
	case r.Method == http.MethodGet && path == "invocation/next":
		select {
		case a.polled <- time.Now():
		default:
		}
		var inv *invocation
		select {
		case inv = <-in.next:
		case <-r.Context().Done():
			return
		}
		in.mu.Lock()
		inv.handed = time.Now()
		in.current = inv
		in.mu.Unlock()
		deadline := inv.handed.Add(in.o.Timeout)
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(deadline.UnixMilli(), 10))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", in.o.FunctionARN)
		w.Header().Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000001")
		_, _ = w.Write(inv.event)
	case r.Method == http.MethodPost && strings.HasPrefix(path, "invocation/") && strings.HasSuffix(path, "/response"):
		b, _ := io.ReadAll(r.Body)
		a.finish(strings.TrimSuffix(strings.TrimPrefix(path, "invocation/"), "/response"), b, nil)
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodPost && strings.HasPrefix(path, "invocation/") && strings.HasSuffix(path, "/error"):
		a.finish(strings.TrimSuffix(strings.TrimPrefix(path, "invocation/"), "/error"), nil, decodeErr(r.Body))
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodPost && path == "init/error":
		in.mu.Lock()
		in.initErr = decodeErr(r.Body)
		in.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	default:
		http.Error(w, "unknown runtime API path", http.StatusNotFound)
	}
}

func (a *runtimeAPI) finish(id string, payload []byte, fnErr *FunctionError) {
	in := a.in
	in.mu.Lock()
	defer in.mu.Unlock()
	inv := in.current
	if inv == nil || inv.id != id || !inv.finished.IsZero() {
		return
	}
	inv.finished, inv.payload, inv.fnErr = time.Now(), payload, fnErr
	close(inv.done)
}

func decodeErr(r io.Reader) *FunctionError {
	var e FunctionError
	if err := json.NewDecoder(r).Decode(&e); err != nil {
		e = FunctionError{Type: "Unknown", Message: errors.Join(errors.New("undecodable error payload"), err).Error()}
	}
	return &e
}
