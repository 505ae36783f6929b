package samples

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/local/apigw"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Sentinel errors of Generate.
var (
	// ErrUnknownProvider: a sample's folder names no registered provider.
	ErrUnknownProvider = errors.New("unknown provider")
	// ErrNotEnabled: the tenant does not enable a sample's provider.
	ErrNotEnabled = errors.New("provider not enabled for the tenant")
	// ErrCannotSign: the provider has no webhook.Signer, or its signature
	// over the sample does not verify.
	ErrCannotSign = errors.New("cannot sign sample")
)

// Route is the route template.yaml gives IngestFunction: POST for
// deliveries, GET for verification handshakes.
var Route = apigw.Route{Methods: []string{http.MethodGet, http.MethodPost}, Path: "/webhooks/{tenant}/{provider}"}

// DefaultHost is the API's execute-api host when a sample's URL has none.
const DefaultHost = "abc123.execute-api.us-east-1.amazonaws.com"

// sourceIP is the caller's address in generated events (TEST-NET-3).
const sourceIP = "203.0.113.10"

// Event is one generated event file.
type Event struct {
	// File is the file name: "<provider>-<sample name>.json".
	File   string
	Sample Sample
	// Payload is the event API Gateway delivers to IngestFunction.
	Payload events.APIGatewayV2HTTPRequest
	// Reply is the answer IngestFunction owes a verification handshake
	// (nothing is queued then); nil for deliveries it queues.
	Reply *webhook.Reply
}

// Options configure Generate.
type Options struct {
	// Tenant is the {tenant} the events are addressed to.
	Tenant string
	// Providers is that tenant's provider configuration (the "providers"
	// object of its entry in the tenants file).
	Providers map[string]webhook.Config
	// Registry resolves the {provider} segment.
	Registry webhook.Registry
	// Now is the signing time and the request time of every event.
	Now time.Time
	// BaseURL, when set, replaces the samples' scheme and host (e.g.
	// "http://127.0.0.1:3000" to send them to `make run`); schemes that sign
	// the URL (Twilio) are signed for it.
	BaseURL string
}

// Generate builds one event per sample, addressed to o.Tenant and re-signed
// at o.Now with the tenant's first secret for the provider. A GET handshake
// is not signed: its hub.verify_token, when present, becomes the tenant's
// "verify_token" setting. Every event is checked the way IngestFunction will
// check it (Verify, then Handshake or Events), so Generate never writes an
// event the function would reject.
//
// It returns an error naming the sample and wrapping ErrUnknownProvider,
// ErrNotEnabled, ErrCannotSign, or the provider's own webhook error when the
// re-signed sample is rejected.
func Generate(samples []Sample, o Options) ([]Event, error) {
	out := make([]Event, 0, len(samples))
	for _, s := range samples {
		ev, err := generate(s, o)
		if err != nil {
			return nil, fmt.Errorf("sample %s/%s: %w", s.Provider, s.Name, err)
		}
		out = append(out, ev)
	}
	return out, nil
}

func generate(s Sample, o Options) (Event, error) {
	ev := Event{File: s.Provider + "-" + s.Name + ".json", Sample: s}
	p, ok := o.Registry.Lookup(s.Provider)
	if !ok {
		return ev, fmt.Errorf("%w: %q", ErrUnknownProvider, s.Provider)
	}
	cfg, ok := o.Providers[s.Provider]
	if !ok {
		return ev, fmt.Errorf("%w: tenant %q has no %q entry in its providers", ErrNotEnabled, o.Tenant, s.Provider)
	}
	req := s.Request()
	req.Tenant = o.Tenant
	base, err := origin(s.URL)
	if err != nil {
		return ev, err
	}
	if o.BaseURL != "" {
		base = strings.TrimRight(o.BaseURL, "/")
	}
	path := "/webhooks/" + o.Tenant + "/" + s.Provider
	hs, isHandshaker := p.(webhook.Handshaker)
	if s.Method == http.MethodGet {
		if !isHandshaker {
			return ev, fmt.Errorf("%w: GET sample for a provider without handshakes", ErrCannotSign)
		}
		if req.Query.Has("hub.verify_token") {
			req.Query.Set("hub.verify_token", cfg.Settings["verify_token"])
		}
		req.URL = withQuery(base+path, req.Query)
		reply, ok, err := hs.Handshake(req, cfg)
		if err != nil {
			return ev, fmt.Errorf("handshake: %w", err)
		}
		if !ok {
			return ev, fmt.Errorf("%w: GET sample is no handshake", ErrCannotSign)
		}
		ev.Reply = &reply
	} else {
		req.URL = withQuery(base+path, req.Query)
		signer, ok := p.(webhook.Signer)
		if !ok {
			return ev, fmt.Errorf("%w: %s implements no webhook.Signer", ErrCannotSign, s.Provider)
		}
		if err := signer.Sign(req, cfg, o.Now); err != nil {
			return ev, fmt.Errorf("sign: %w", err)
		}
		if err := p.Verify(req, cfg, o.Now); err != nil {
			return ev, fmt.Errorf("%w: the re-signed sample does not verify: %w", ErrCannotSign, err)
		}
		if isHandshaker {
			reply, ok, err := hs.Handshake(req, cfg)
			if err != nil {
				return ev, fmt.Errorf("handshake: %w", err)
			}
			if ok {
				ev.Reply = &reply
			}
		}
		if ev.Reply == nil {
			if _, err := p.Events(req, cfg); err != nil {
				return ev, fmt.Errorf("events: %w", err)
			}
		}
	}
	ev.Payload, err = payload(req, o)
	return ev, err
}

// origin returns the scheme and host of a sample's URL, defaulting to
// https://DefaultHost.
func origin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("sample url: %w", err)
	}
	scheme, host := u.Scheme, u.Host
	if scheme == "" {
		scheme = "https"
	}
	if host == "" {
		host = DefaultHost
	}
	return scheme + "://" + host, nil
}

func withQuery(u string, q url.Values) string {
	if len(q) == 0 {
		return u
	}
	return u + "?" + q.Encode()
}

// payload builds the API Gateway event through apigw.Event, the same
// conversion `make run` serves, plus what API Gateway adds on AWS: the
// forwarding headers, a trace id, and the API id from the execute-api host.
func payload(req *webhook.Request, o Options) (events.APIGatewayV2HTTPRequest, error) {
	hr, err := http.NewRequest(req.Method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return events.APIGatewayV2HTTPRequest{}, fmt.Errorf("build request: %w", err)
	}
	hr.Proto, hr.ProtoMajor, hr.ProtoMinor = "HTTP/1.1", 1, 1
	hr.RemoteAddr = sourceIP + ":50312"
	hr.Header = req.Header.Clone()
	if len(req.Body) > 0 {
		hr.Header.Set("Content-Length", strconv.Itoa(len(req.Body)))
	}
	port := hr.URL.Port()
	if port == "" {
		port = map[string]string{"http": "80"}[hr.URL.Scheme]
	}
	if port == "" {
		port = "443"
	}
	hr.Header.Set("X-Forwarded-For", sourceIP)
	hr.Header.Set("X-Forwarded-Port", port)
	hr.Header.Set("X-Forwarded-Proto", hr.URL.Scheme)
	hr.Header.Set("X-Amzn-Trace-Id", traceID(o.Now))
	ev, err := apigw.Event(hr, Route, map[string]string{"tenant": req.Tenant, "provider": req.Provider}, o.Now)
	if err != nil {
		return ev, err
	}
	if id, _, ok := strings.Cut(hr.URL.Hostname(), ".execute-api."); ok {
		ev.RequestContext.APIID = id
	}
	return ev, nil
}

// traceID returns an X-Ray trace header value: "Root=1-<epoch hex>-<96 random bits>".
func traceID(now time.Time) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "Root=1-" + strconv.FormatInt(now.Unix(), 16) + "-" + hex.EncodeToString(b[:])
}

// Write makes dir hold exactly evs: it writes each event as indented JSON
// to dir/<File> and removes every other .json file in dir, returning the
// names it removed. It returns the first file system error.
func Write(dir string, evs []Event) (removed []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, ev := range evs {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // bodies stay readable: "<" not "\u003c"
		enc.SetIndent("", "  ")
		if err := enc.Encode(wireEvent(ev.Payload)); err != nil {
			return nil, fmt.Errorf("encode %s: %w", ev.File, err)
		}
		if err := os.WriteFile(filepath.Join(dir, ev.File), buf.Bytes(), 0o644); err != nil {
			return nil, err
		}
		keep[ev.File] = true
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range old {
		if name := filepath.Base(f); !keep[name] {
			if err := os.Remove(f); err != nil {
				return removed, err
			}
			removed = append(removed, name)
		}
	}
	return removed, nil
}

// fileEvent is the JSON shape of an event file. aws-lambda-go always encodes
// requestContext.authentication (a struct), but API Gateway sends it only
// for mutual TLS; the pointer here drops it when empty, so the files are the
// events API Gateway delivers.
type fileEvent struct {
	events.APIGatewayV2HTTPRequest
	RequestContext fileContext `json:"requestContext"`
}

type fileContext struct {
	events.APIGatewayV2HTTPRequestContext
	Authentication *events.APIGatewayV2HTTPRequestContextAuthentication `json:"authentication,omitempty"`
}

func wireEvent(ev events.APIGatewayV2HTTPRequest) fileEvent {
	out := fileEvent{APIGatewayV2HTTPRequest: ev, RequestContext: fileContext{APIGatewayV2HTTPRequestContext: ev.RequestContext}}
	if a := ev.RequestContext.Authentication; a != (events.APIGatewayV2HTTPRequestContextAuthentication{}) {
		out.RequestContext.Authentication = &a
	}
	return out
}
