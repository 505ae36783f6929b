package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/internal/deadline"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/tenantid"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// inboundSource resolves a tenant's inbound configuration. It returns an
// error wrapping tenant.ErrNotFound for unknown tenants.
type inboundSource interface {
	Get(ctx context.Context, id string) (tenant.Inbound, error)
}

// claimStore is the idempotency store: Check reads a key before the send,
// Complete records it once queued (see package idempotency for the
// semantics and errors of each call).
type claimStore interface {
	Check(ctx context.Context, key, validation string) error
	Complete(ctx context.Context, key, validation string) error
}

// sender puts messages on a FIFO queue in order, reporting each one's
// outcome (queue.SQS.SendBatch).
type sender interface {
	SendBatch(ctx context.Context, url string, msgs []queue.Message) []error
}

// Defaults of Config.
const (
	// DefaultMaxDuration is API Gateway HTTP API's 30-second integration
	// timeout less a second: past it the sender gets API Gateway's own 503.
	DefaultMaxDuration = 29 * time.Second
	// DefaultSafetyMargin is kept free before the deadline to answer.
	DefaultSafetyMargin = 2 * time.Second
	// sendRounds is how often entries SQS failed are sent again within a
	// request.
	sendRounds = 3
	// parallel bounds the concurrent checks and completions of a batched
	// delivery.
	parallel = 10
)

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
	// MaxBodyBytes caps the raw body (default queue.MaxMessageBytes);
	// MaxEventBytes an event's queue message (default queue.MaxEventBytes:
	// what SQS takes inline). Queue senders that offload large bodies to S3
	// raise both (NewAWS).
	MaxBodyBytes, MaxEventBytes int
	// MaxDuration bounds a request's work from its start (default
	// DefaultMaxDuration); the Lambda deadline, when earlier, bounds it
	// too. SafetyMargin (DefaultSafetyMargin) before that deadline, pending
	// AWS calls are cut short and the sender gets a retryable 503. Each
	// AWS call (with the SDK's own retries) gets at most half the work
	// time left, so a hung call leaves time to send again or answer.
	MaxDuration, SafetyMargin time.Duration
	Now                       func() time.Time
	Logger                    *slog.Logger
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
	if cfg.MaxEventBytes <= 0 {
		cfg.MaxEventBytes = queue.MaxEventBytes
	}
	if cfg.MaxDuration <= 0 {
		cfg.MaxDuration = DefaultMaxDuration
	}
	if cfg.SafetyMargin <= 0 {
		cfg.SafetyMargin = DefaultSafetyMargin
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
	// answer is a Responder's synchronous answer, sent instead of the JSON
	// one when the events were queued (accepted or duplicate).
	answer *webhook.Reply
	err    error
}

type eventResult struct {
	ID      string  `json:"eventId"`
	Key     string  `json:"-"`
	Outcome outcome `json:"status"`
	// digest and stored are the payload digests of a reused id: this
	// delivery's and the one its key was completed with.
	digest, stored string
}

// Handle serves one request. It never returns an error: every failure is an
// HTTP response, so API Gateway never answers a bare 500 of its own.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := h.cfg.Now()
	// The work deadline: the earlier of the Lambda deadline and API
	// Gateway's, less the margin kept to answer.
	deadline := time.Now().Add(h.cfg.MaxDuration)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	wctx, cancel := context.WithDeadline(ctx, deadline.Add(-h.cfg.SafetyMargin))
	defer cancel()
	res := h.serve(wctx, &req, start)
	resp, out := h.respond(res)
	h.log(ctx, res, out, resp.StatusCode, start)
	return resp, nil
}

func (h *Handler) serve(ctx context.Context, req *events.APIGatewayV2HTTPRequest, now time.Time) *result {
	res := &result{}
	tenantID, providerName := pathParams(req)
	res.tenant, res.provider = tenantID, providerName
	if err := tenantid.Validate(tenantID); err != nil {
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
	tctx, cancel := deadline.HalfLeft(ctx)
	in, err := h.cfg.Tenants.Get(tctx, tenantID)
	cancel()
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
	msgs, err := h.messages(tenantID, providerName, in.Routes, evs, now)
	if err != nil {
		res.err = err
		return res
	}
	h.enqueue(ctx, res, msgs)
	if r, ok := p.(webhook.Responder); ok && res.err == nil {
		if reply, ok := r.Respond(wreq, cfg, evs); ok {
			res.answer = &reply
		}
	}
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
