package ingest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// inboundSource resolves a tenant's inbound configuration. It returns an
// error wrapping tenant.ErrNotFound for unknown tenants.
type inboundSource interface {
	Get(ctx context.Context, id string) (tenant.Inbound, error)
}

// claimStore is the idempotency store (see package idempotency for the
// semantics of each call).
type claimStore interface {
	Claim(ctx context.Context, key, validation string) (idempotency.Claim, error)
	Complete(ctx context.Context, c idempotency.Claim) error
	Release(ctx context.Context, c idempotency.Claim) error
}

// sender puts a message on a FIFO queue and returns its message id.
type sender interface {
	Send(ctx context.Context, url string, m queue.Message) (string, error)
}

// Config holds the handler's dependencies. Providers, Tenants, Claims, Queue
// and QueueURLTemplate are required.
type Config struct {
	Providers webhook.Registry
	Tenants   inboundSource
	Claims    claimStore
	Queue     sender
	// QueueURLTemplate is the tenant queue URL with "{tenant}" in place of
	// the tenant id.
	QueueURLTemplate string
	// MaxBodyBytes caps the raw body (default queue.MaxMessageBytes).
	MaxBodyBytes int
	Now          func() time.Time
	Logger       *slog.Logger
}

// Handler serves API Gateway HTTP API (payload v2) requests.
type Handler struct {
	cfg Config
}

// New returns a handler; missing optional fields take defaults.
func New(cfg Config) *Handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = queue.MaxMessageBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg}
}

// result is what one request did; it becomes the response and the log line.
type result struct {
	tenant, provider string
	events           []eventResult
	reply            *webhook.Reply
	retryAfter       time.Duration
	err              error
}

type eventResult struct {
	ID      string  `json:"eventId"`
	Key     string  `json:"-"`
	Outcome outcome `json:"status"`
	// digest and stored are the payload digests of a reused id: this
	// delivery's and the one its key was claimed with.
	digest, stored string
}

// Handle serves one request. It never returns an error: every failure is an
// HTTP response, so API Gateway never answers a bare 500 of its own.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := h.cfg.Now()
	res := h.serve(ctx, &req, start)
	resp, out := h.respond(res)
	h.log(ctx, res, out, resp.StatusCode, start)
	return resp, nil
}

func (h *Handler) serve(ctx context.Context, req *events.APIGatewayV2HTTPRequest, now time.Time) *result {
	res := &result{}
	tenantID, providerName := pathParams(req)
	res.tenant, res.provider = tenantID, providerName
	if err := tenant.ValidID(tenantID); err != nil {
		res.err = err
		return res
	}
	method := req.RequestContext.HTTP.Method
	if method != http.MethodPost && method != http.MethodGet {
		res.err = fmt.Errorf("%w: use POST for deliveries, GET for handshakes", errMethodNotAllowed)
		return res
	}
	p, ok := h.cfg.Providers.Lookup(providerName)
	if !ok {
		res.err = errNotFound
		return res
	}
	body, err := rawBody(req, h.cfg.MaxBodyBytes)
	if err != nil {
		res.err = err
		return res
	}
	in, err := h.cfg.Tenants.Get(ctx, tenantID)
	if err != nil {
		if !errors.Is(err, tenant.ErrNotFound) && !errors.Is(err, tenant.ErrInvalid) {
			err = fmt.Errorf("%w: tenant configuration: %w", errUnavailable, err)
		}
		res.err = err
		return res
	}
	cfg, ok := in.Provider(providerName)
	if !ok {
		res.err = errNotFound
		return res
	}
	wreq, err := webhookRequest(req, tenantID, providerName, body)
	if err != nil {
		res.err = err
		return res
	}

	hs, isHandshaker := p.(webhook.Handshaker)
	if method == http.MethodGet {
		if !isHandshaker {
			res.err = fmt.Errorf("%w: %s has no GET handshake, deliveries use POST", errMethodNotAllowed, providerName)
			return res
		}
		res.reply, res.err = handshake(hs, wreq, cfg)
		return res
	}

	// Verification comes before any parsing and any write.
	if err := p.Verify(wreq, cfg, now); err != nil {
		res.err = err
		return res
	}
	if isHandshaker {
		if reply, ok, err := hs.Handshake(wreq, cfg); err != nil || ok {
			res.reply, res.err = &reply, err
			return res
		}
	}
	evs, err := p.Events(wreq, cfg)
	if err != nil {
		res.err = err
		return res
	}
	msgs, err := h.messages(tenantID, providerName, evs, now)
	if err != nil {
		res.err = err
		return res
	}
	h.enqueue(ctx, res, msgs)
	return res
}

func handshake(hs webhook.Handshaker, req *webhook.Request, cfg webhook.Config) (*webhook.Reply, error) {
	reply, ok, err := hs.Handshake(req, cfg)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: not a verification handshake", webhook.ErrMalformed)
	}
	return &reply, nil
}

// pending is one event ready to be claimed and sent.
type pending struct {
	id, key, validation string
	msg                 queue.Message
}

// messages builds every envelope before anything is claimed, so an
// oversized or unencodable event rejects the delivery without side effects.
func (h *Handler) messages(tenantID, providerName string, evs []webhook.Event, now time.Time) ([]pending, error) {
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: delivery holds no event", webhook.ErrMalformed)
	}
	out := make([]pending, 0, len(evs))
	for _, ev := range evs {
		m, env, err := queue.EventMessage(tenantID, providerName, ev, now)
		if err != nil {
			return nil, err
		}
		out = append(out, pending{id: env.EventID, key: env.Key, validation: webhook.Digest(ev), msg: m})
	}
	return out, nil
}

// enqueue claims, sends and completes each event in order. It stops at the
// first AWS error; events already queued stay queued (a retry sees them as
// duplicates), the failed one's claim is released.
func (h *Handler) enqueue(ctx context.Context, res *result, msgs []pending) {
	url := queue.URL(h.cfg.QueueURLTemplate, res.tenant)
	for _, m := range msgs {
		er := eventResult{ID: m.id, Key: m.key}
		claim, err := h.cfg.Claims.Claim(ctx, m.key, m.validation)
		var ce *idempotency.ConflictError
		switch {
		case errors.As(err, &ce) && errors.Is(err, idempotency.ErrPayloadMismatch):
			er.Outcome, er.digest, er.stored = outReused, m.validation, ce.Record.Validation
			res.events = append(res.events, er)
			continue
		case errors.As(err, &ce) && errors.Is(err, idempotency.ErrDuplicate):
			er.Outcome = outDuplicate
			res.events = append(res.events, er)
			continue
		case errors.As(err, &ce):
			er.Outcome = outInFlight
			if ra := idempotency.RetryAfter(ce.Record, h.cfg.Now()); ra > res.retryAfter {
				res.retryAfter = ra
			}
			res.events = append(res.events, er)
			continue
		case err != nil:
			res.err = fmt.Errorf("%w: %w", errUnavailable, err)
			return
		}
		if _, err := h.cfg.Queue.Send(ctx, url, m.msg); err != nil {
			// Release with a context that survives the request's
			// cancellation: a claim left behind would answer the sender's
			// retries 409 until its lease runs out.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			if rerr := h.cfg.Claims.Release(rctx, claim); rerr != nil {
				err = errors.Join(err, rerr)
			}
			cancel()
			if errors.Is(err, queue.ErrTooLarge) {
				res.err = err
			} else {
				res.err = fmt.Errorf("%w: %w", errUnavailable, err)
			}
			return
		}
		// The event is durably queued from here on. A failed completion only
		// means a later duplicate may be enqueued again after the lease; SQS
		// deduplication (5 minutes) and the worker's effect ledger absorb it,
		// so the sender still gets its 2xx.
		if err := h.cfg.Claims.Complete(ctx, claim); err != nil {
			h.cfg.Logger.WarnContext(ctx, "claim completion failed after enqueue",
				slog.String("tenantId", res.tenant), slog.String("idempotencyKey", m.key), slog.String("error", err.Error()))
		}
		er.Outcome = outAccepted
		res.events = append(res.events, er)
	}
}

// rank orders event outcomes by which one decides a delivery's answer: a
// reused id outranks an in-flight one, which outranks an accepted one.
var rank = map[outcome]int{outDuplicate: 0, outAccepted: 1, outInFlight: 2, outReused: 3}

// respond turns a result into the HTTP response.
func (h *Handler) respond(res *result) (events.APIGatewayV2HTTPResponse, outcome) {
	if res.err != nil {
		status, out, msg := classify(res.err)
		resp := jsonResponse(status, map[string]string{"error": msg})
		switch status {
		case http.StatusServiceUnavailable:
			resp.Headers["retry-after"] = "5"
		case http.StatusMethodNotAllowed:
			resp.Headers["allow"] = "GET, POST"
		}
		return resp, out
	}
	if res.reply != nil {
		ct := res.reply.ContentType
		if ct == "" {
			ct = "text/plain; charset=utf-8"
		}
		status := res.reply.Status
		if status == 0 {
			status = http.StatusOK
		}
		return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{"content-type": ct}, Body: res.reply.Body}, outHandshake
	}
	out := outDuplicate
	for _, e := range res.events {
		if rank[e.Outcome] > rank[out] {
			out = e.Outcome
		}
	}
	if out == outReused {
		return jsonResponse(http.StatusConflict, map[string]any{
			"error":  idempotency.ErrPayloadMismatch.Error() + ": this event id was already received with another body",
			"events": res.events,
		}), out
	}
	if out == outInFlight {
		resp := jsonResponse(http.StatusConflict, map[string]any{
			"error":  "an earlier delivery of this event is still being processed, retry later",
			"events": res.events,
		})
		resp.Headers["retry-after"] = strconv.Itoa(int(res.retryAfter / time.Second))
		return resp, out
	}
	return jsonResponse(http.StatusOK, map[string]any{"status": out, "events": res.events}), out
}

func jsonResponse(status int, v any) events.APIGatewayV2HTTPResponse {
	b, _ := json.Marshal(v) // maps of strings and eventResults always encode
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"content-type": "application/json"},
		Body:       string(b),
	}
}

// log writes the request's one line: fixed keys, no secrets, signatures or
// bodies, at most MaxLogLineBytes for a single-event delivery (the line is
// most of what logging costs per webhook). It carries no EMF block: the
// Webhooks and IngestDuration metrics come from metric filters on this
// line (template.yaml), and the idempotency key is tenantId#provider#eventId.
func (h *Handler) log(ctx context.Context, res *result, out outcome, status int, start time.Time) {
	attrs := []any{
		slog.String("tenantId", res.tenant),
		slog.String("provider", res.provider),
		slog.String("outcome", string(out)),
		slog.Int("status", status),
		slog.Float64("durationMs", float64(h.cfg.Now().Sub(start).Microseconds())/1000),
	}
	if len(res.events) > 0 {
		attrs = append(attrs, slog.String("eventId", res.events[0].ID))
		if len(res.events) > 1 {
			ids := make([]string, len(res.events))
			for i, e := range res.events {
				ids[i] = e.ID + "=" + string(e.Outcome)
			}
			attrs = append(attrs, slog.Int("events", len(res.events)), slog.Any("eventIds", ids))
		}
	}
	for _, e := range res.events {
		if e.Outcome == outReused { // digests only: never the body
			attrs = append(attrs, slog.String("payloadDigest", e.digest), slog.String("storedDigest", e.stored))
			break
		}
	}
	level := slog.LevelInfo
	if out == outReused {
		level = slog.LevelWarn
	}
	if res.err != nil {
		attrs = append(attrs, slog.String("error", res.err.Error()))
		if status >= 500 {
			level = slog.LevelError
		}
	}
	h.cfg.Logger.Log(ctx, level, "webhook", attrs...)
}

// MaxLogLineBytes is the budget of the one log line of an accepted
// single-event webhook with an event id of up to 64 bytes (CloudWatch Logs
// bills every byte ingested).
const MaxLogLineBytes = 300

// pathParams reads {tenant} and {provider} from the route's path parameters,
// falling back to the raw path (for events without them).
func pathParams(req *events.APIGatewayV2HTTPRequest) (string, string) {
	t, p := req.PathParameters["tenant"], req.PathParameters["provider"]
	if t != "" && p != "" {
		return t, p
	}
	parts := strings.Split(strings.Trim(req.RawPath, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "webhooks" {
			return parts[i+1], parts[i+2]
		}
	}
	return t, p
}

// rawBody returns the body bytes exactly as sent.
func rawBody(req *events.APIGatewayV2HTTPRequest, max int) ([]byte, error) {
	n := len(req.Body)
	if req.IsBase64Encoded {
		n = base64.StdEncoding.DecodedLen(len(req.Body))
	}
	if n > max+3 { // DecodedLen rounds up to a multiple of 3
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", errBodyTooLarge, n, max)
	}
	if !req.IsBase64Encoded {
		return []byte(req.Body), nil
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, errBadEncoding
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", errBodyTooLarge, len(b), max)
	}
	return b, nil
}

// webhookRequest builds the provider-facing request: canonical headers,
// parsed query and the public URL as the sender called it.
func webhookRequest(req *events.APIGatewayV2HTTPRequest, tenantID, providerName string, body []byte) (*webhook.Request, error) {
	hdr := make(http.Header, len(req.Headers))
	for k, v := range req.Headers {
		hdr[http.CanonicalHeaderKey(k)] = []string{v}
	}
	q, err := url.ParseQuery(req.RawQueryString)
	if err != nil {
		return nil, fmt.Errorf("%w: query string: %v", webhook.ErrMalformed, err)
	}
	scheme := hdr.Get("X-Forwarded-Proto")
	if scheme == "" {
		scheme = "https"
	}
	host := hdr.Get("Host")
	if host == "" {
		host = req.RequestContext.DomainName
	}
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	u := scheme + "://" + host + path
	if req.RawQueryString != "" {
		u += "?" + req.RawQueryString
	}
	return &webhook.Request{
		Method:   req.RequestContext.HTTP.Method,
		Tenant:   tenantID,
		Provider: providerName,
		Header:   hdr,
		Query:    q,
		Body:     body,
		URL:      u,
	}, nil
}
