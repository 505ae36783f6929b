// Package capture records the AWS requests a function makes, from the
// requests on the wire, as (IAM action, resource ARN) calls: a recording
// proxy per function for bootstraps in child processes (the deploy
// rehearsal), a recording transport under in-process SDK clients (make
// chaos). Body reads a request's body and puts it back, for any transport
// that looks at a request before sending it.
package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/hookpack/hookpack/pkg/local/emulator"
)

// Region and Account are moto's: the ARNs calls are recorded under.
const (
	Region  = emulator.Region
	Account = emulator.Account
)

// Call is one AWS request a function made, as IAM authorizes it.
type Call struct {
	Function string `json:"function"`
	// Action is the IAM action ("sqs:SendMessage"; a batch operation is
	// authorized as its single form: SendMessageBatch is sqs:SendMessage).
	Action string `json:"action"`
	// Resource is the ARN IAM checks the action against.
	Resource string `json:"resource"`
	// Operation is the API operation ("SendMessageBatch").
	Operation string `json:"operation"`
}

// Recorder records every AWS request a function makes as (action,
// resource), from the request on the wire. A bootstrap in a child process
// gets its own endpoint (AWS_ENDPOINT_URL), a reverse proxy in front of
// moto (the SDK middleware of pkg/local/awscount cannot see into another
// process); an in-process handler (make chaos) gets a Transport under its
// SDK clients. Both read the request with the same parser. Its methods are
// safe for concurrent use.
type Recorder struct {
	target *url.URL

	mu    sync.Mutex
	calls []Call
	srvs  []*http.Server
}

// NewRecorder records requests; its Endpoints pass them on to endpoint
// (unused by Transport).
func NewRecorder(endpoint string) (*Recorder, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	return &Recorder{target: u}, nil
}

// Endpoint starts a proxy recording as function and returns its URL.
func (r *Recorder) Endpoint(function string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	proxy := httputil.NewSingleHostReverseProxy(r.target)
	proxy.ErrorHandler = proxyError
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := Body(req)
		r.record(function, req, body)
		proxy.ServeHTTP(w, req)
	})}
	go func() { _ = srv.Serve(l) }()
	r.mu.Lock()
	r.srvs = append(r.srvs, srv)
	r.mu.Unlock()
	return "http://" + l.Addr().String(), nil
}

// Transport returns base (http.DefaultTransport when nil) recording each
// request as function's.
func (r *Recorder) Transport(function string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		body, err := Body(req)
		if err != nil {
			return nil, err
		}
		r.record(function, req, body)
		return base.RoundTrip(req)
	})
}

// Body reads req's body and replaces it (and GetBody) with a copy, so that
// the request still sends it: a transport can look at a request before
// passing it on. (GetBody may rewind the same stream the request sends, so
// it is not used to peek.) A request without a body gives nil.
func Body(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return body, nil
}

// proxyError answers a request the proxy could not pass on. A client that
// went away is not answered: the pollers cancel their long polls
// (ReceiveMessage waits up to 20 s) when a run stops, which would otherwise
// print "http: proxy error: context canceled" once per poller.
func proxyError(w http.ResponseWriter, req *http.Request, err error) {
	if errors.Is(err, context.Canceled) && req.Context().Err() != nil {
		return
	}
	log.Printf("capture: proxy error: %v", err)
	w.WriteHeader(http.StatusBadGateway)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Calls returns the calls recorded so far, in order.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Close stops every proxy.
func (r *Recorder) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.srvs {
		_ = s.Close()
	}
}

func (r *Recorder) record(function string, req *http.Request, body []byte) {
	calls := parse(req, body)
	for i := range calls {
		calls[i].Function = function
	}
	r.mu.Lock()
	r.calls = append(r.calls, calls...)
	r.mu.Unlock()
}

// scope finds the service in a SigV4 Authorization header's credential
// scope (Credential=<key>/<date>/<region>/<service>/aws4_request).
var scope = regexp.MustCompile(`Credential=[^/]+/[^/]+/[^/]+/([^/]+)/aws4_request`)

// batchAction is the IAM action of a batch operation.
var batchAction = map[string]string{
	"SendMessageBatch":             "SendMessage",
	"DeleteMessageBatch":           "DeleteMessage",
	"ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}

// parse returns the (action, resource) pairs of one request: the action
// from X-Amz-Target (JSON protocols) or the Action form field (query
// protocol) or, for S3, the method and path; the resource from the
// request's TableName, QueueUrl, Name/Names/Path, TopicArn, or S3 bucket
// and key ("*" for actions without resource-level permissions, such as
// cloudwatch:GetMetricData).
func parse(req *http.Request, body []byte) []Call {
	service := ""
	if m := scope.FindStringSubmatch(req.Header.Get("Authorization")); m != nil {
		service = m[1]
	}
	if service == "s3" {
		return []Call{s3Call(req)}
	}
	if service == "monitoring" { // CloudWatch signs as "monitoring", IAM says "cloudwatch"
		service = "cloudwatch"
	}
	op := ""
	if t := req.Header.Get("X-Amz-Target"); t != "" {
		op = t[strings.LastIndex(t, ".")+1:]
	}
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	if op == "" {
		if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") != "" {
			op = form.Get("Action")
			in = map[string]any{}
			for k := range form {
				in[k] = form.Get(k)
			}
		}
	}
	action := op
	if a, ok := batchAction[op]; ok {
		action = a
	}
	c := Call{Action: service + ":" + action, Operation: op}
	str := func(k string) string { s, _ := in[k].(string); return s }
	switch {
	case str("TableName") != "":
		c.Resource = "arn:aws:dynamodb:" + Region + ":" + Account + ":table/" + str("TableName")
	case str("QueueUrl") != "":
		c.Resource = QueueARN(str("QueueUrl"))
	case service == "ssm" && str("Name") != "":
		c.Resource = ParameterARN(str("Name"))
	case service == "ssm" && str("Path") != "":
		c.Resource = ParameterARN(str("Path"))
	case service == "sns" && str("TopicArn") != "":
		c.Resource = str("TopicArn")
	case service == "ssm" && in["Names"] != nil:
		names, _ := in["Names"].([]any)
		out := make([]Call, 0, len(names))
		for _, n := range names {
			out = append(out, Call{Action: c.Action, Operation: op, Resource: ParameterARN(n.(string))})
		}
		return out
	default:
		c.Resource = "*"
	}
	return []Call{c}
}

// ParameterARN is the ARN of an SSM parameter name (with or without its
// leading slash).
func ParameterARN(name string) string {
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	return "arn:aws:ssm:" + Region + ":" + Account + ":parameter" + name
}

// s3Call maps a path-style S3 request to its IAM action and resource.
func s3Call(req *http.Request) Call {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	c := Call{Resource: "arn:aws:s3:::" + bucket}
	if key != "" {
		c.Resource += "/" + key
	}
	switch {
	case key != "" && req.Method == http.MethodPut:
		c.Operation = "PutObject"
	case key != "" && (req.Method == http.MethodGet || req.Method == http.MethodHead):
		c.Operation = "GetObject"
	case key != "" && req.Method == http.MethodDelete:
		c.Operation = "DeleteObject"
	default:
		c.Operation = req.Method + "Bucket"
	}
	if req.Method == http.MethodHead {
		c.Operation = "HeadObject" // authorized as s3:GetObject
		c.Action = "s3:GetObject"
		return c
	}
	c.Action = "s3:" + c.Operation
	return c
}

// QueueARN is the ARN of a queue URL ("<scheme>://<host>/<account>/<name>").
func QueueARN(u string) string {
	parts := strings.Split(strings.TrimRight(u, "/"), "/")
	if len(parts) < 2 {
		return ""
	}
	return "arn:aws:sqs:" + Region + ":" + parts[len(parts)-2] + ":" + parts[len(parts)-1]
}
