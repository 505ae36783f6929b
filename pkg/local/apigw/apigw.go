// Package apigw stands in for API Gateway's HTTP API on a developer
// machine: it turns a net/http request into the exact payload format 2.0
// event API Gateway would send to the function (raw path, lower-cased and
// comma-joined headers, raw query string, cookies, path parameters, base64
// bodies for non-text content types) and writes the function's response
// back. `make run` and the end-to-end tests serve the real ingest handler
// through it.
package apigw

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Route is an HTTP API route such as "/webhooks/{tenant}/{provider}".
type Route struct {
	Methods []string
	Path    string
}

// Match returns the path parameters when path matches the route pattern
// the way HTTP API matches it: segment for segment, so a trailing slash, an
// empty segment or an extra segment is no match (HTTP API then answers 404),
// and a path variable never matches an empty segment.
func (r Route) Match(path string) (map[string]string, bool) {
	want := strings.Split(r.Path, "/")
	got := strings.Split(path, "/")
	if len(want) != len(got) {
		return nil, false
	}
	params := map[string]string{}
	for i, w := range want {
		if strings.HasPrefix(w, "{") && strings.HasSuffix(w, "}") {
			if got[i] == "" {
				return nil, false
			}
			params[w[1:len(w)-1]] = got[i]
			continue
		}
		if w != got[i] {
			return nil, false
		}
	}
	return params, true
}

// MaxBody mirrors API Gateway's 10 MB payload limit.
const MaxBody = 10 << 20

// Event converts r into the event API Gateway would deliver for route.
func Event(r *http.Request, route Route, params map[string]string, now time.Time) (events.APIGatewayV2HTTPRequest, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return events.APIGatewayV2HTTPRequest{}, fmt.Errorf("read body: %w", err)
	}
	if len(body) > MaxBody {
		return events.APIGatewayV2HTTPRequest{}, fmt.Errorf("body exceeds API Gateway's %d bytes", MaxBody)
	}
	headers := make(map[string]string, len(r.Header)+1)
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			continue
		}
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	// API Gateway adds the forwarding headers; the scheme is what the
	// caller used, so URL-signing schemes (Twilio) see the URL it called.
	proto, port := "http", "80"
	if r.TLS != nil || r.URL.Scheme == "https" {
		proto, port = "https", "443"
	}
	if _, p, err := net.SplitHostPort(r.Host); err == nil {
		port = p
	}
	headers["x-forwarded-for"] = sourceIP(r.RemoteAddr)
	headers["x-forwarded-proto"] = proto
	headers["x-forwarded-port"] = port
	var query map[string]string
	if r.URL.RawQuery != "" {
		query = map[string]string{}
		for k, vs := range r.URL.Query() {
			query[k] = strings.Join(vs, ",")
		}
	}
	var cookies []string
	for _, c := range r.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	routeKey := r.Method + " " + route.Path
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              routeKey,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     routeKey,
			AccountID:    "123456789012",
			Stage:        "$default",
			RequestID:    requestID(),
			APIID:        "local",
			DomainName:   r.Host,
			DomainPrefix: strings.Split(r.Host, ".")[0],
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP(r.RemoteAddr),
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if isText(r.Header.Get("Content-Type")) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev, nil
}

// isText reports whether HTTP API passes a body of this content type as
// text; everything else (form bodies included) arrives base64-encoded.
func isText(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"), mt == "application/json", mt == "application/xml",
		mt == "application/javascript", strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	return false
}

// Write sends a function response to w.
func Write(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Handler is a Lambda handler for HTTP API events.
type Handler func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Server serves route with fn; see Routes.
func Server(route Route, fn Handler, timeout time.Duration, logger *slog.Logger) http.Handler {
	return Routes([]Route{route}, fn, timeout, logger)
}

// Routes serves routes with fn, like API Gateway with a Lambda proxy
// integration: a request whose method and path match no route (a method the
// route does not list, a trailing slash) gets HTTP API's own 404
// {"message":"Not Found"} without reaching the function — HTTP API has no
// 405 of its own; 500 when the function errors; a per-request deadline like
// the function's timeout.
func Routes(routes []Route, fn Handler, timeout time.Duration, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var route Route
		var params map[string]string
		for _, rt := range routes {
			if p, ok := rt.Match(r.URL.Path); ok && slices.Contains(rt.Methods, r.Method) {
				route, params = rt, p
				break
			}
		}
		if params == nil {
			gatewayError(w, http.StatusNotFound, "Not Found")
			return
		}
		ev, err := Event(r, route, params, time.Now())
		if err != nil {
			gatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		resp, err := fn(ctx, ev)
		if err != nil {
			logger.Error("function error", slog.String("error", err.Error()))
			gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
		Write(w, resp)
	})
}

// ParseRouteKeys groups HTTP API route keys ("POST /webhooks/{tenant}/{provider}")
// by path into Routes. It returns an error naming a key that is not
// "<METHOD> <path>" (HTTP API's $default and ANY routes are not served).
func ParseRouteKeys(keys []string) ([]Route, error) {
	var routes []Route
	for _, k := range keys {
		method, path, ok := strings.Cut(k, " ")
		if !ok || method == "ANY" || !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("route key %q: want \"<METHOD> /path\"", k)
		}
		i := slices.IndexFunc(routes, func(r Route) bool { return r.Path == path })
		if i < 0 {
			routes, i = append(routes, Route{Path: path}), len(routes)
		}
		routes[i].Methods = append(routes[i].Methods, method)
	}
	return routes, nil
}

// gatewayError writes a response API Gateway generates itself: a JSON
// message, as HTTP API sends it.
func gatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"message":%q}`, msg)
}

func sourceIP(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
}

func requestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
