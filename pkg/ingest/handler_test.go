package ingest

import (
	"bytes"
	"context"
	"crypto/sha1" //nolint:gosec // Intercom signs with HMAC-SHA1
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const (
	acmeGitHubSecret   = "acme-github-secret"
	acmeStripeSecret   = "whsec_acme_stripe"
	acmeWhatsAppSecret = "acme-meta-app-secret"
	acmeIntercomSecret = "acme-intercom-client-secret"
	globexSecret       = "globex-github-secret"
)

// intercomSettings is the Intercom configuration of docs/providers/hmac.md.
var intercomSettings = map[string]string{
	"header": "X-Hub-Signature", "algorithm": "sha1", "prefix": "sha1=",
	"id": "json:id", "type": "json:topic", "conversation": "json:data.item.id",
	"defining": "id,topic,app_id,created_at,data",
}

var fixedNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// fakeTenants is an in-memory inbound source.
type fakeTenants struct {
	m   map[string]tenant.Inbound
	err error
}

func (f fakeTenants) Get(_ context.Context, id string) (tenant.Inbound, error) {
	if f.err != nil {
		return tenant.Inbound{}, f.err
	}
	in, ok := f.m[id]
	if !ok {
		return in, fmt.Errorf("inbound %s: %w", id, tenant.ErrNotFound)
	}
	return in, nil
}

// fakeQueue records sends, entry by entry, like queue.SQS.SendBatch: it
// fails the next fails entries, and every entry failEntry returns an error
// for; after a failure, the later entries of its conversation are not sent
// (queue.ErrNotSent). Like a FIFO queue, it accepts an entry whose
// deduplication id it accepted within the last 5 minutes (on now, time.Now
// when nil) without queueing it again.
// With hang, a call waits for its context to end and fails.
type fakeQueue struct {
	mu        sync.Mutex
	sent      []queue.Message
	urls      []string
	calls     [][]string // the deduplication ids of each call's entries
	fails     int
	failEntry func(m queue.Message) error
	hang      bool
	now       func() time.Time
	accepted  map[string]time.Time // deduplication id → when first accepted
}

// fifoDedup is SQS FIFO's deduplication interval.
const fifoDedup = 5 * time.Minute

func (q *fakeQueue) SendBatch(ctx context.Context, url string, msgs []queue.Message) []error {
	if q.hang {
		<-ctx.Done()
		return slices.Repeat([]error{ctx.Err()}, len(msgs))
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	errs := make([]error, len(msgs))
	var call []string
	stopped := map[string]error{} // group → the error that holds its later entries back
	for i, m := range msgs {
		if err := stopped[m.GroupID]; err != nil {
			errs[i] = fmt.Errorf("%w: %w", queue.ErrNotSent, err)
			continue
		}
		call = append(call, m.DeduplicationID)
		if q.failEntry != nil {
			errs[i] = q.failEntry(m)
		}
		now := time.Now()
		if q.now != nil {
			now = q.now()
		}
		switch at, seen := q.accepted[m.DeduplicationID]; {
		case q.fails > 0:
			q.fails--
			errs[i] = errors.New("sqs: service unavailable")
		case errs[i] != nil:
		case seen && now.Sub(at) < fifoDedup: // accepted, not queued again
		default:
			if q.accepted == nil {
				q.accepted = map[string]time.Time{}
			}
			q.accepted[m.DeduplicationID] = now
			q.sent = append(q.sent, m)
			q.urls = append(q.urls, url)
		}
		stopped[m.GroupID] = errs[i]
	}
	q.calls = append(q.calls, call)
	return errs
}

func (q *fakeQueue) count() int { q.mu.Lock(); defer q.mu.Unlock(); return len(q.sent) }

// countingClaims wraps the in-memory store and counts reads and writes;
// beforeComplete, when set, runs before each completion (a concurrent
// delivery's, landing first).
type countingClaims struct {
	*idempotency.Memory
	mu                sync.Mutex
	checks, completes int
	failComplete      bool
	beforeComplete    func(key string)
}

func (c *countingClaims) Check(ctx context.Context, key, v string) error {
	c.mu.Lock()
	c.checks++
	c.mu.Unlock()
	return c.Memory.Check(ctx, key, v)
}

func (c *countingClaims) Complete(ctx context.Context, key, v string) error {
	c.mu.Lock()
	c.completes++
	fail, before := c.failComplete, c.beforeComplete
	c.mu.Unlock()
	if fail {
		return errors.New("dynamodb: throttled")
	}
	if before != nil {
		before(key)
	}
	return c.Memory.Complete(ctx, key, v)
}

type fixture struct {
	h      *Handler
	q      *fakeQueue
	claims *countingClaims
	logs   *bytes.Buffer
	now    *time.Time
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	now := fixedNow
	f := &fixture{logs: &bytes.Buffer{}, now: &now}
	clock := func() time.Time { return *f.now }
	f.q = &fakeQueue{now: clock}
	f.claims = &countingClaims{Memory: idempotency.NewMemory(idempotency.Options{Now: clock})}
	f.h = New(Config{
		Providers: provider.Registry(),
		Tenants: fakeTenants{m: map[string]tenant.Inbound{
			"acme": {Providers: map[string]webhook.Config{
				"github":   {Secrets: []string{"old-secret", acmeGitHubSecret}},
				"stripe":   {Secrets: []string{acmeStripeSecret}},
				"whatsapp": {Secrets: []string{acmeWhatsAppSecret}},
				"hmac":     {Secrets: []string{acmeIntercomSecret}, Settings: intercomSettings},
			}},
			"globex": {Providers: map[string]webhook.Config{"github": {Secrets: []string{globexSecret}}}},
		}},
		Claims:           f.claims,
		Queue:            f.q,
		QueueURLTemplate: "https://sqs.local/000/hookpack-{tenant}.fifo",
		Now:              clock,
		Logger:           slog.New(slog.NewJSONHandler(f.logs, nil)),
	})
	return f
}

const githubBody = `{"action":"opened","issue":{"number":42},"repository":{"full_name":"octo/hello"}}`

func githubRequest(tenantID, secret, body, delivery string) events.APIGatewayV2HTTPRequest {
	return apiRequest("POST", "/webhooks/"+tenantID+"/github", map[string]string{
		"content-type":        "application/json",
		"x-hub-signature-256": "sha256=" + hex.EncodeToString(providertest.MAC(sha256.New, secret, body)),
		"x-github-event":      "issues",
		"x-github-delivery":   delivery,
	}, body)
}

func stripeRequest(secret string, ts time.Time, body string) events.APIGatewayV2HTTPRequest {
	t := fmt.Sprint(ts.Unix())
	return apiRequest("POST", "/webhooks/acme/stripe", map[string]string{
		"content-type":     "application/json",
		"stripe-signature": "t=" + t + ",v1=" + hex.EncodeToString(providertest.MAC(sha256.New, secret, t, ".", body)),
	}, body)
}

// intercomRequest is an Intercom notification to acme's hmac provider,
// signed as Intercom signs: X-Hub-Signature "sha1=" + hex HMAC-SHA1 of the body.
func intercomRequest(body string) events.APIGatewayV2HTTPRequest {
	return apiRequest("POST", "/webhooks/acme/hmac", map[string]string{
		"content-type":    "application/json",
		"x-hub-signature": "sha1=" + hex.EncodeToString(providertest.MAC(sha1.New, acmeIntercomSecret, body)),
	}, body)
}

func apiRequest(method, path string, headers map[string]string, body string) events.APIGatewayV2HTTPRequest {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	req := events.APIGatewayV2HTTPRequest{
		RouteKey: method + " /webhooks/{tenant}/{provider}",
		RawPath:  path,
		Headers:  headers,
		Body:     body,
	}
	if len(parts) == 3 {
		req.PathParameters = map[string]string{"tenant": parts[1], "provider": parts[2]}
	}
	req.RequestContext.HTTP.Method = method
	req.RequestContext.DomainName = "abc.execute-api.us-east-1.amazonaws.com"
	return req
}

func (f *fixture) do(t *testing.T, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := f.h.Handle(context.Background(), req)
	if err != nil {
		t.Fatalf("Handle() error = %v; the handler must answer every request", err)
	}
	return resp
}

func TestRejections(t *testing.T) {
	stripeBody := `{"id":"evt_1","type":"invoice.paid","data":{"object":{"id":"in_1","customer":"cus_1"}}}`
	tests := []struct {
		name     string
		req      events.APIGatewayV2HTTPRequest
		tenants  fakeTenants
		status   int
		contains string
	}{
		{"invalid tenant id", githubRequest("Acme!", acmeGitHubSecret, githubBody, "d1"), fakeTenants{}, 400, "invalid tenant id"},
		{"tenant id too long", githubRequest(strings.Repeat("a", 41), acmeGitHubSecret, githubBody, "d1"), fakeTenants{}, 400, "invalid tenant id"},
		{"unknown tenant", githubRequest("nobody", acmeGitHubSecret, githubBody, "d1"), fakeTenants{}, 404, "unknown tenant or provider"},
		{"provider not enabled", githubRequestAs("globex", "stripe"), fakeTenants{}, 404, "unknown tenant or provider"},
		{"unknown provider", githubRequestAs("acme", "paypal"), fakeTenants{}, 404, "unknown tenant or provider"},
		{"wrong method", withMethod(githubRequest("acme", acmeGitHubSecret, githubBody, "d1"), "PUT"), fakeTenants{}, 405, "method not allowed"},
		{"GET without handshake", withMethod(githubRequest("acme", acmeGitHubSecret, githubBody, "d1"), "GET"), fakeTenants{}, 405, "no GET handshake"},
		{"other tenant's secret", githubRequest("acme", globexSecret, githubBody, "d1"), fakeTenants{}, 401, "invalid signature"},
		{"tampered body", withBody(githubRequest("acme", acmeGitHubSecret, githubBody, "d1"), githubBody+" "), fakeTenants{}, 401, "invalid signature"},
		{"missing signature", withoutHeader(githubRequest("acme", acmeGitHubSecret, githubBody, "d1"), "x-hub-signature-256"), fakeTenants{}, 401, "missing signature"},
		{"missing delivery id", withoutHeader(githubRequest("acme", acmeGitHubSecret, githubBody, "d1"), "x-github-delivery"), fakeTenants{}, 400, "X-GitHub-Delivery"},
		{"malformed json", githubRequest("acme", acmeGitHubSecret, "{not json", "d1"), fakeTenants{}, 400, "malformed"},
		{"stale stripe timestamp", stripeRequest(acmeStripeSecret, fixedNow.Add(-301*time.Second), stripeBody), fakeTenants{}, 401, "timestamp outside tolerance"},
		{"future stripe timestamp", stripeRequest(acmeStripeSecret, fixedNow.Add(301*time.Second), stripeBody), fakeTenants{}, 401, "timestamp outside tolerance"},
		{"bad base64", withBase64(githubRequest("acme", acmeGitHubSecret, githubBody, "d1"), "***"), fakeTenants{}, 400, "base64"},
		{"too large", githubRequest("acme", acmeGitHubSecret, strings.Repeat("x", queue.MaxMessageBytes+10), "d1"), fakeTenants{}, 413, "too large"},
		{"credential store down", githubRequest("acme", acmeGitHubSecret, githubBody, "d1"), fakeTenants{err: errors.New("ssm: throttled")}, 503, "retry later"},
		{"invalid tenant configuration", githubRequest("acme", acmeGitHubSecret, githubBody, "d1"), fakeTenants{err: fmt.Errorf("%w: tenant \"acme\": providers.github.secrets[0]: empty secret", tenant.ErrInvalid)}, 500, "tenant configuration is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.tenants.err != nil {
				f.h.cfg.Tenants = tt.tenants
			}
			resp := f.do(t, tt.req)
			if resp.StatusCode != tt.status || !strings.Contains(resp.Body, tt.contains) {
				t.Errorf("Handle(%s) = %d %s, want %d containing %q", tt.name, resp.StatusCode, resp.Body, tt.status, tt.contains)
			}
			if f.q.count() != 0 || f.claims.checks != 0 || f.claims.completes != 0 {
				t.Errorf("rejected request read %d keys, wrote %d and queued %d messages, want none", f.claims.checks, f.claims.completes, f.q.count())
			}
		})
	}
}

func githubRequestAs(tenantID, providerName string) events.APIGatewayV2HTTPRequest {
	r := githubRequest(tenantID, acmeGitHubSecret, githubBody, "d1")
	r.PathParameters["provider"] = providerName
	r.RawPath = "/webhooks/" + tenantID + "/" + providerName
	return r
}

func withMethod(r events.APIGatewayV2HTTPRequest, m string) events.APIGatewayV2HTTPRequest {
	r.RequestContext.HTTP.Method = m
	return r
}

func withBody(r events.APIGatewayV2HTTPRequest, b string) events.APIGatewayV2HTTPRequest {
	r.Body = b
	return r
}

func withBase64(r events.APIGatewayV2HTTPRequest, b string) events.APIGatewayV2HTTPRequest {
	r.Body, r.IsBase64Encoded = b, true
	return r
}

func withoutHeader(r events.APIGatewayV2HTTPRequest, h string) events.APIGatewayV2HTTPRequest {
	hs := map[string]string{}
	for k, v := range r.Headers {
		if k != h {
			hs[k] = v
		}
	}
	r.Headers = hs
	return r
}

func TestAcceptThenDuplicate(t *testing.T) {
	f := newFixture(t)
	req := githubRequest("acme", acmeGitHubSecret, githubBody, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	resp := f.do(t, req)
	if resp.StatusCode != 200 || !strings.Contains(resp.Body, `"status":"accepted"`) {
		t.Fatalf("first delivery = %d %s, want 200 accepted", resp.StatusCode, resp.Body)
	}
	resp = f.do(t, req)
	if resp.StatusCode != 200 || !strings.Contains(resp.Body, `"status":"duplicate"`) {
		t.Fatalf("second delivery = %d %s, want 200 duplicate", resp.StatusCode, resp.Body)
	}
	if f.q.count() != 1 {
		t.Fatalf("queued %d messages, want 1", f.q.count())
	}
	m := f.q.sent[0]
	if m.GroupID != "octo/hello#42" {
		t.Errorf("MessageGroupId = %q, want octo/hello#42", m.GroupID)
	}
	// GitHub signs the body only: the key is its hash, the delivery GUID
	// is the traced event id.
	key := "acme#github#sha256:" + fieldsHash(githubBody)
	if m.DeduplicationID != webhook.DeduplicationID(key) {
		t.Errorf("MessageDeduplicationId = %q", m.DeduplicationID)
	}
	if f.q.urls[0] != "https://sqs.local/000/hookpack-acme.fifo" {
		t.Errorf("queue url = %q", f.q.urls[0])
	}
	env, err := envelope.Decode(m.Body)
	if err != nil {
		t.Fatal(err)
	}
	if env.Key != key || env.EventID != "72d3162e-cc78-11e3-81ab-4c9367dc0958" || env.Type != "issues" || env.Body != githubBody || !env.ReceivedAt.Equal(fixedNow) {
		t.Errorf("envelope = %+v", env)
	}
}

func TestHeadersAreCaseInsensitiveAndBase64Decoded(t *testing.T) {
	f := newFixture(t)
	req := githubRequest("acme", acmeGitHubSecret, githubBody, "d-b64")
	hs := map[string]string{}
	for k, v := range req.Headers {
		hs[strings.ToUpper(k)] = v
	}
	req.Headers = hs
	req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(githubBody)), true
	if resp := f.do(t, req); resp.StatusCode != 200 {
		t.Fatalf("Handle() = %d %s, want 200", resp.StatusCode, resp.Body)
	}
}

// A delivery whose send fails writes nothing: the sender's retry finds the
// key free and queues the event.
func TestSendFailureLeavesTheKeyFreeSoRetrySucceeds(t *testing.T) {
	f := newFixture(t)
	f.q.fails = sendRounds // every send of this request fails
	req := githubRequest("acme", acmeGitHubSecret, githubBody, "d-retry")
	resp := f.do(t, req)
	if resp.StatusCode != 503 || resp.Headers["retry-after"] == "" {
		t.Fatalf("delivery with SQS down = %d %v, want 503 with Retry-After", resp.StatusCode, resp.Headers)
	}
	if _, err := f.claims.Record(context.Background(), "acme#github#sha256:"+fieldsHash(githubBody)); f.claims.completes != 0 || !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("completions = %d, record: %v; want none", f.claims.completes, err)
	}
	resp = f.do(t, req)
	if resp.StatusCode != 200 || !strings.Contains(resp.Body, "accepted") {
		t.Fatalf("retry = %d %s, want 200 accepted", resp.StatusCode, resp.Body)
	}
	f.do(t, req)
	if f.q.count() != 1 {
		t.Errorf("queued %d messages, want exactly 1", f.q.count())
	}
}

// barrierClaims holds every check until n checks have been made, so that
// n concurrent deliveries all read the key before any of them sends.
type barrierClaims struct {
	claimStore
	wg *sync.WaitGroup
}

func (c barrierClaims) Check(ctx context.Context, key, v string) error {
	err := c.claimStore.Check(ctx, key, v)
	c.wg.Done()
	c.wg.Wait()
	return err
}

// Concurrent deliveries of one event all find the key free (none has
// recorded it yet) and each sends it; the queue's deduplication id keeps
// one message, one completion wins, the others find it done with the same
// digest, and every sender gets 200 accepted, only after its own send
// succeeded.
func TestConcurrentDeliveriesQueueOnce(t *testing.T) {
	f := newFixture(t)
	req := githubRequest("acme", acmeGitHubSecret, githubBody, "d-burst")
	const n = 50
	var checked sync.WaitGroup
	checked.Add(n)
	f.h.cfg.Claims = barrierClaims{f.claims, &checked}
	var wg sync.WaitGroup
	var mu sync.Mutex
	start, answers := make(chan struct{}), map[string]int{}
	for range n {
		wg.Go(func() {
			<-start
			resp, _ := f.h.Handle(context.Background(), req)
			mu.Lock()
			defer mu.Unlock()
			var body struct{ Status string }
			_ = json.Unmarshal([]byte(resp.Body), &body)
			answers[fmt.Sprint(resp.StatusCode, " ", body.Status)]++
		})
	}
	close(start)
	wg.Wait()
	if answers["200 accepted"] != n {
		t.Errorf("answers = %v, want %d 200 accepted", answers, n)
	}
	if f.q.count() != 1 {
		t.Errorf("queued %d messages, want 1", f.q.count())
	}
	if r, err := f.claims.Record(context.Background(), "acme#github#sha256:"+fieldsHash(githubBody)); err != nil || r.Status != idempotency.StatusCompleted {
		t.Errorf("Record() = %+v, %v; want COMPLETED", r, err)
	}
}

// A delivery whose completion finds the id completed by another delivery
// with another payload (both read the key free and sent) answers 409
// reused, with both digests in its log line: SQS kept the body that reached
// it first under the event's deduplication id (here this delivery's, the
// other never sent in this test), never both.
func TestReusedIDRaceAnswersReused(t *testing.T) {
	f := newFixture(t)
	key := "acme#github#sha256:" + fieldsHash(githubBody)
	f.claims.beforeComplete = func(k string) {
		f.claims.beforeComplete = nil
		if err := f.claims.Memory.Complete(context.Background(), k, "another-digest"); err != nil {
			t.Error(err)
		}
	}
	resp := f.do(t, githubRequest("acme", acmeGitHubSecret, githubBody, "d-race"))
	if resp.StatusCode != 409 || !strings.Contains(resp.Body, "id reused with a different payload") {
		t.Fatalf("Handle() = %d %s, want 409 id reused", resp.StatusCode, resp.Body)
	}
	if f.q.count() != 1 {
		t.Errorf("queued %d messages, want this delivery's 1 (sent before the completion)", f.q.count())
	}
	if r, _ := f.claims.Record(context.Background(), key); r.Validation != "another-digest" {
		t.Errorf("record digest = %q, want the first completion's", r.Validation)
	}
	if logs := f.logs.String(); !strings.Contains(logs, `"storedDigest":"another-digest"`) || !strings.Contains(logs, `"level":"WARN"`) {
		t.Errorf("log = %s, want a WARN line with both digests", logs)
	}
}

// A completion that fails after the send still answers 200: the event is
// queued. Its key stays free, so the sender's next delivery sends it
// again: within SQS's 5-minute deduplication interval the queue drops the
// copy; later it is queued a second time, for the worker's effect ledger
// to absorb (a later copy of the same event runs no effect twice).
func TestCompletionFailureStillAcknowledges(t *testing.T) {
	f := newFixture(t)
	f.claims.failComplete = true
	req := githubRequest("acme", acmeGitHubSecret, githubBody, "d-complete")
	steps := []struct {
		after  time.Duration
		queued int
	}{{0, 1}, {4 * time.Minute, 1}, {2 * time.Minute, 2}}
	for _, st := range steps {
		*f.now = f.now.Add(st.after)
		if resp := f.do(t, req); resp.StatusCode != 200 || !strings.Contains(resp.Body, "accepted") {
			t.Fatalf("Handle() = %d %s, want 200 accepted: the event is durably queued", resp.StatusCode, resp.Body)
		}
		if f.q.count() != st.queued {
			t.Errorf("after %s more: queued %d, want %d", st.after, f.q.count(), st.queued)
		}
	}
}

func TestSecretRotation(t *testing.T) {
	f := newFixture(t)
	for i, secret := range []string{"old-secret", acmeGitHubSecret} {
		resp := f.do(t, githubRequest("acme", secret, githubBody, fmt.Sprint("rot-", i)))
		if resp.StatusCode != 200 {
			t.Errorf("secret %d = %d %s, want 200", i, resp.StatusCode, resp.Body)
		}
	}
}

func TestLogsHoldNoSecretsSignaturesOrBodies(t *testing.T) {
	f := newFixture(t)
	ok := githubRequest("acme", acmeGitHubSecret, githubBody, "d-log")
	bad := githubRequest("acme", "wrong", githubBody, "d-log2")
	f.do(t, ok)
	f.do(t, bad)
	f.h.cfg.Queue = &fakeQueue{fails: sendRounds}
	f.do(t, githubRequest("acme", acmeGitHubSecret, githubBody, "d-log3"))
	logs := f.logs.String()
	for _, secretish := range []string{acmeGitHubSecret, ok.Headers["x-hub-signature-256"], bad.Headers["x-hub-signature-256"][7:], "octo/hello", `"action"`} {
		if strings.Contains(logs, secretish) {
			t.Errorf("logs contain %q:\n%s", secretish, logs)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d log lines for 3 requests, want 3:\n%s", len(lines), logs)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tenantId", "provider", "eventId", "outcome", "status", "durationMs"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("log line lacks %q: %s", k, lines[0])
		}
	}
	if rec["outcome"] != "accepted" {
		t.Errorf("outcome = %v, want accepted", rec["outcome"])
	}
}

// TestLogLineBudget holds the one line of an accepted webhook to
// MaxLogLineBytes, with the longest event id GitHub sends (a UUID) and one
// of 64 bytes, and without an EMF block (metric filters read the line).
func TestLogLineBudget(t *testing.T) {
	tests := []struct {
		name, tenant, delivery string
	}{
		{"github uuid", "acme", "4f2c1a60-0001-11ef-9c4b-6f2d3e4a5b6c"},
		{"64-byte id", "acme", strings.Repeat("d", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if resp := f.do(t, githubRequest(tt.tenant, acmeGitHubSecret, githubBody, tt.delivery)); resp.StatusCode != 200 {
				t.Fatalf("Handle() = %d %s, want 200", resp.StatusCode, resp.Body)
			}
			line := strings.TrimSpace(f.logs.String())
			if n := len(line) + 1; n > MaxLogLineBytes {
				t.Errorf("log line = %d bytes, want ≤ %d: %s", n, MaxLogLineBytes, line)
			}
			// template.yaml's metric filters read these fields.
			for _, k := range []string{`"msg":"webhook"`, `"outcome":"accepted"`, `"durationMs":`} {
				if !strings.Contains(line, k) {
					t.Errorf("log line lacks %s (the metric filters read it): %s", k, line)
				}
			}
			for _, k := range []string{`"_aws"`, `"idempotencyKey"`} {
				if strings.Contains(line, k) {
					t.Errorf("log line holds %s: %s", k, line)
				}
			}
			// GitHub's delivery id is not signed: the key is a content
			// hash, which the line carries so the delivery id finds it.
			var rec struct{ TenantID, Provider, EventID, DedupID string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			key := rec.TenantID + "#" + rec.Provider + "#" + rec.DedupID
			if rec.EventID != tt.delivery || key != "acme#github#sha256:"+fieldsHash(githubBody) {
				t.Errorf("log line eventId, dedupId = %q, %q, want %q and the key's content hash: %s", rec.EventID, rec.DedupID, tt.delivery, line)
			}
		})
	}
}

// A rejected request's path segments are anyone's to choose: the log line
// holds at most maxPathValueBytes of each.
func TestLogLineClipsPathSegments(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, path := range []string{"/webhooks/acme/" + long, "/webhooks/" + long + "/github"} {
		f := newFixture(t)
		resp := f.do(t, apiRequest("POST", path, nil, "{}"))
		line := f.logs.String()
		if resp.StatusCode/100 != 4 || len(line) > 2*MaxLogLineBytes || !strings.Contains(line, strings.Repeat("x", maxPathValueBytes)+"…") {
			t.Errorf("POST %.40s… = %d, log line of %d bytes: %s", path, resp.StatusCode, len(line), line)
		}
	}
}

// fieldsHash is webhook.DedupID's content hash of one field.
func fieldsHash(body string) string {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(body)))
	h.Write(n[:])
	h.Write([]byte(body))
	return hex.EncodeToString(h.Sum(nil))
}

// TestReplayWithFreshIDHeaderIsADuplicate: a captured GitHub delivery sent
// again with new X-GitHub-Delivery values queues nothing more.
func TestReplayWithFreshIDHeaderIsADuplicate(t *testing.T) {
	f := newFixture(t)
	for i, id := range []string{"d-orig", "d-fresh-1", "d-fresh-2", "d-fresh-3"} {
		resp := f.do(t, githubRequest("acme", acmeGitHubSecret, githubBody, id))
		want := `"status":"duplicate"`
		if i == 0 {
			want = `"status":"accepted"`
		}
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, want) {
			t.Errorf("delivery %s = %d %s, want 200 %s", id, resp.StatusCode, resp.Body, want)
		}
	}
	if f.q.count() != 1 {
		t.Errorf("queued %d, want 1: a replay with a fresh unsigned id is a duplicate", f.q.count())
	}
}

// TestReusedIDWithAnotherPayloadIsRejected: a signed id seen again with
// other content is answered 409, while the sender's own retry — rendered
// again with new delivery metadata — is a duplicate, for a named adapter
// (Stripe's pending_webhooks) and for the generic one configured for a
// sender that does the same (Intercom's delivery_attempts, first_sent_at).
func TestReusedIDWithAnotherPayloadIsRejected(t *testing.T) {
	const stripeFirst = `{"id":"evt_reuse","type":"invoice.paid","pending_webhooks":2,"data":{"object":{"id":"in_1","customer":"cus_1","amount_paid":100}}}`
	const notif = `{"type":"notification_event","app_id":"a1","data":{"type":"notification_event_data","item":{"type":"conversation","id":"147","state":"%s"}},` +
		`"id":"notif_1","topic":"conversation.admin.closed","delivery_status":"%s","delivery_attempts":%d,"first_sent_at":%d,"created_at":1700000000}`
	senders := []struct {
		name, provider string
		cfg            webhook.Config // what Events needs to compute the logged digests
		request        func(body string) events.APIGatewayV2HTTPRequest
		// second reuses the first's id with other content; rerendered is
		// the sender's retry of the first.
		first, second, rerendered string
		member                    string // a body member the logs must not show
	}{
		{"stripe", "stripe", webhook.Config{},
			func(b string) events.APIGatewayV2HTTPRequest { return stripeRequest(acmeStripeSecret, fixedNow, b) },
			stripeFirst,
			strings.Replace(stripeFirst, `"amount_paid":100`, `"amount_paid":999`, 1),
			strings.Replace(stripeFirst, `"pending_webhooks":2`, `"pending_webhooks":1`, 1),
			"amount_paid"},
		{"intercom through hmac", "hmac", webhook.Config{Settings: intercomSettings}, intercomRequest,
			fmt.Sprintf(notif, "closed", "pending", 1, 1700000001),
			fmt.Sprintf(notif, "open", "pending", 1, 1700000001),
			fmt.Sprintf(notif, "closed", "retry", 2, 1700000061),
			"first_sent_at"},
	}
	for _, s := range senders {
		t.Run(s.name, func(t *testing.T) {
			f := newFixture(t)
			steps := []struct {
				name     string
				body     string
				status   int
				contains string
				queued   int
			}{
				{"first delivery", s.first, 200, `"status":"accepted"`, 1},
				{"same id, another body", s.second, 409, "id reused with a different payload", 1},
				{"the provider's own retry", s.first, 200, `"status":"duplicate"`, 1},
				{"the provider's retry, rendered again", s.rerendered, 200, `"status":"duplicate"`, 1},
			}
			for _, st := range steps {
				resp := f.do(t, s.request(st.body))
				if resp.StatusCode != st.status || !strings.Contains(resp.Body, st.contains) || resp.Headers["retry-after"] != "" {
					t.Errorf("%s: Handle() = %d %v %s, want %d containing %q without Retry-After", st.name, resp.StatusCode, resp.Headers, resp.Body, st.status, st.contains)
				}
				if f.q.count() != st.queued {
					t.Errorf("%s: queued %d, want %d", st.name, f.q.count(), st.queued)
				}
			}
			lines := strings.Split(strings.TrimSpace(f.logs.String()), "\n")
			var rec map[string]any
			if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil {
				t.Fatal(err)
			}
			digest := func(b string) string {
				p, _ := f.h.cfg.Providers.Lookup(s.provider)
				evs, err := p.Events(&webhook.Request{Body: []byte(b), Header: http.Header{}}, s.cfg)
				if err != nil {
					t.Fatal(err)
				}
				return webhook.Digest(evs[0])
			}
			if rec["tenantId"] != "acme" || rec["outcome"] != "id_reused" || rec["payloadDigest"] != digest(s.second) || rec["storedDigest"] != digest(s.first) || rec["level"] != "WARN" {
				t.Errorf("log line = %s, want tenant, outcome id_reused and both digests", lines[1])
			}
			if strings.Contains(f.logs.String(), s.member) {
				t.Errorf("logs contain the body:\n%s", f.logs.String())
			}
		})
	}
}
