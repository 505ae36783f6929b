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
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/idempotency"
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

// claimStore is the idempotency store (see package idempotency for the
// semantics of each call).
type claimStore interface {
	Claim(ctx context.Context, key, validation string) (idempotency.Claim, error)
	Complete(ctx context.Context, c idempotency.Claim) error
	Release(ctx context.Context, c idempotency.Claim) error
}

// sender puts messages on a FIFO queue in order, reporting each one's
// outcome (queue.SQS.SendBatch).
type sender interface {
	SendBatch(ctx context.Context, url string, msgs []queue.Message) []error
}

// Defaults of Config.
const (
	// DefaultMaxDuration is API Gateway HTTP API's 30-second integration
	// timeout less a second: past it the sender gets API Gateway's own 503
	// with no claim released.
	DefaultMaxDuration = 29 * time.Second
	// DefaultSafetyMargin is kept free before the deadline to release the
	// claims of events not queued and answer.
	DefaultSafetyMargin = 2 * time.Second
	// sendRounds is how often entries SQS failed are sent again within a
	// request.
	sendRounds = 3
	// parallel bounds the concurrent claims and completions of a batched
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
	// The work deadline: the earlier of the Lambda deadline and API
	// Gateway's, less the margin kept to release claims and answer.
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
	tctx, cancel := callContext(ctx)
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
		if m.Size() > h.cfg.MaxEventBytes {
			return nil, fmt.Errorf("%w: event %s is %d bytes queued, the limit is %d", queue.ErrTooLarge, env.EventID, m.Size(), h.cfg.MaxEventBytes)
		}
		out = append(out, pending{id: env.EventID, key: env.Key, validation: webhook.Digest(ev), msg: m})
	}
	return out, nil
}

// enqueue claims every event, sends the claimed ones with SendMessageBatch
// in delivery order (sending again only the entries SQS failed), completes
// the claims of those queued and releases the others. A conversation's
// events after one not claimed are held back (holdBack). Events queued stay
// queued whatever happens to the rest: when some event is not queued, the
// sender gets a retryable 503 (or 409), and its retry finds the queued ones
// duplicates and claims only the others.
func (h *Handler) enqueue(ctx context.Context, res *result, msgs []pending) {
	st := make([]claimState, len(msgs))
	h.each(len(msgs), func(i int) {
		cctx, cancel := callContext(ctx)
		defer cancel()
		st[i].claim, st[i].err = h.cfg.Claims.Claim(cctx, msgs[i].key, msgs[i].validation)
	})

	var claimed []int
	for i := range msgs {
		var ce *idempotency.ConflictError
		switch err := st[i].err; {
		case errors.As(err, &ce) && errors.Is(err, idempotency.ErrPayloadMismatch):
			st[i].out, st[i].err, st[i].stored = outReused, nil, ce.Record.Validation
		case errors.As(err, &ce) && errors.Is(err, idempotency.ErrDuplicate):
			st[i].out, st[i].err = outDuplicate, nil
		case errors.As(err, &ce):
			if ra := idempotency.RetryAfter(ce.Record, h.cfg.Now()); ra > res.retryAfter {
				res.retryAfter = ra
			}
			st[i].out, st[i].err = outInFlight, nil
		case err != nil:
			st[i].err = fmt.Errorf("%w: %w", errUnavailable, err)
		default:
			st[i].claimed = true
			claimed = append(claimed, i)
		}
	}

	send := holdBack(msgs, st)
	sendErrs := h.send(ctx, queue.URL(h.cfg.QueueURLTemplate, res.tenant), msgs, send)
	for _, i := range send {
		st[i].err = sendErrs[i]
	}

	// The claims of events not queued are released with a context that
	// survives the work deadline (a claim left behind would answer the
	// sender's retries 409 until its lease runs out); completions use what
	// is left of the work time: a failed completion only means a later
	// duplicate may be enqueued again after the lease, which SQS
	// deduplication (5 minutes) and the worker's effect ledger absorb, so
	// the sender still gets its 2xx for a queued event.
	h.each(len(claimed), func(j int) {
		i := claimed[j]
		if st[i].err == nil && st[i].out == "" {
			cctx, cancel := callContext(ctx)
			defer cancel()
			if err := h.cfg.Claims.Complete(cctx, st[i].claim); err != nil {
				h.cfg.Logger.WarnContext(ctx, "claim completion failed after enqueue",
					slog.String("tenantId", res.tenant), slog.String("idempotencyKey", msgs[i].key), slog.String("error", err.Error()))
			}
			st[i].out = outAccepted
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.SafetyMargin*3/4)
		defer cancel()
		if err := h.cfg.Claims.Release(rctx, st[i].claim); err != nil {
			st[i].err = errors.Join(st[i].err, err)
		}
	})
	for i, m := range msgs {
		if st[i].out == outReused {
			res.events = append(res.events, eventResult{ID: m.id, Key: m.key, Outcome: outReused, digest: m.validation, stored: st[i].stored})
		} else if st[i].out != "" {
			res.events = append(res.events, eventResult{ID: m.id, Key: m.key, Outcome: st[i].out})
		}
		if err := st[i].err; err != nil && res.err == nil {
			if !errors.Is(err, queue.ErrTooLarge) && !errors.Is(err, errUnavailable) {
				err = fmt.Errorf("%w: %w", errUnavailable, err)
			}
			res.err = err
		}
	}
}

// send sends msgs[idx] and returns an error per index of msgs (nil when
// queued): up to sendRounds calls of SendBatch, each round sending again,
// in delivery order, the entries the last one failed with a retryable error
// (SendBatch keeps each conversation in order, and the entries it held
// back behind one that cannot be queued carry that entry's error). Each
// call is bounded by callContext and all by ctx.
func (h *Handler) send(ctx context.Context, url string, msgs []pending, idx []int) []error {
	errs := make([]error, len(msgs))
	for round := 0; len(idx) > 0; round++ {
		batch := make([]queue.Message, len(idx))
		for j, i := range idx {
			batch[j] = msgs[i].msg
		}
		cctx, cancel := callContext(ctx)
		out := h.cfg.Queue.SendBatch(cctx, url, batch)
		cancel()
		var again []int
		for j, i := range idx {
			errs[i] = out[j]
			if out[j] != nil && !errors.Is(out[j], queue.ErrTooLarge) && !errors.Is(out[j], queue.ErrEntryRejected) {
				again = append(again, i)
			}
		}
		if round+1 == sendRounds || ctx.Err() != nil {
			break
		}
		idx = again
	}
	return errs
}

// callContext bounds one AWS call to half the time left before ctx's
// deadline.
func callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(d)/2)
}

// each calls f(0), …, f(n-1), at most parallel at a time, and waits.
func (h *Handler) each(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}

// rank orders event outcomes by which one decides a delivery's answer: a
// reused id outranks an in-flight one, which outranks a held-back one
// (never the answer: the event that held it back is in the same delivery),
// which outranks an accepted one.
var rank = map[outcome]int{outDuplicate: 0, outAccepted: 1, outHeldBack: 2, outInFlight: 3, outReused: 4}

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
		slog.String("tenantId", webhook.Truncate(res.tenant, maxPathValueBytes)),
		slog.String("provider", webhook.Truncate(res.provider, maxPathValueBytes)),
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

// maxPathValueBytes bounds the tenant and provider path segments as logged:
// anyone can send a long one, and every byte logged is billed.
const maxPathValueBytes = 64

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
