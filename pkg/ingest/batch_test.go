package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// whatsappBatch is a signed WhatsApp delivery of n text messages from one
// customer: n events of one conversation, ids wamid.<from>.1 … n.
func whatsappBatch(secret string, from, n int) events.APIGatewayV2HTTPRequest {
	msgs := make([][2]int, n)
	for i := range msgs {
		msgs[i] = [2]int{from, i + 1}
	}
	return whatsappDelivery(secret, msgs)
}

// whatsappDelivery is a signed WhatsApp delivery of text messages, each
// {customer, n} with id wamid.<customer>.<n>: a customer is a conversation.
func whatsappDelivery(secret string, msgs [][2]int) events.APIGatewayV2HTTPRequest {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = fmt.Sprintf(`{"from":"%d","id":"wamid.%d.%d","timestamp":"1700000000","type":"text","text":{"body":"hi %d"}}`, m[0], m[0], m[1], m[1])
	}
	body := `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp",` +
		`"metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"messages":[` + strings.Join(parts, ",") + `]},"field":"messages"}]}]}`
	return apiRequest("POST", "/webhooks/acme/whatsapp", map[string]string{
		"content-type": "application/json", "x-hub-signature-256": "sha256=" + hex.EncodeToString(providertest.MAC(sha256.New, secret, body)),
	}, body)
}

// dedupIDs returns the deduplication ids of events from … of whatsappBatch.
func dedupIDs(from int, events ...int) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = webhook.DeduplicationID(fmt.Sprintf("acme#whatsapp#wamid.%d.%d", from, e))
	}
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func TestBatchedDeliveryUsesSendMessageBatch(t *testing.T) {
	failOnce := map[string]bool{dedupIDs(1, 3)[0]: true}
	all := dedupIDs(1, seq(1, 25)...)
	tests := []struct {
		name      string
		failEntry func(m queue.Message) error
		wantCalls [][]string
		wantCode  int
		// the sender's retry, with SQS healthy again
		wantRetryCalls [][]string
	}{
		{
			name:      "25 events in one ordered batch (queue.SQS splits it in calls of 10)",
			wantCalls: [][]string{all},
			wantCode:  200,
		},
		{
			name: "an entry SQS failed once is sent again with the rest of its conversation, in order",
			failEntry: func(m queue.Message) error {
				if failOnce[m.DeduplicationID] {
					delete(failOnce, m.DeduplicationID)
					return errors.New("InternalError")
				}
				return nil
			},
			wantCalls: [][]string{all[:3], all[2:]},
			wantCode:  200,
		},
		{
			name: "an entry SQS keeps failing: 503, nothing of its conversation after it is queued, and the retry queues the rest",
			failEntry: func(m queue.Message) error {
				if m.DeduplicationID == dedupIDs(1, 7)[0] {
					return errors.New("InternalError")
				}
				return nil
			},
			wantCalls:      [][]string{all[:7], all[6:7], all[6:7]},
			wantCode:       503,
			wantRetryCalls: [][]string{all[6:]},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.q.failEntry = tt.failEntry
			req := whatsappBatch(acmeWhatsAppSecret, 1, 25)
			resp := f.do(t, req)
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("Handle() = %d %s, want %d", resp.StatusCode, resp.Body, tt.wantCode)
			}
			if !slices.EqualFunc(f.q.calls, tt.wantCalls, slices.Equal) {
				t.Errorf("SendMessageBatch calls = %v, want %v", f.q.calls, tt.wantCalls)
			}
			inOrder := func() {
				for i, m := range f.q.sent {
					if m.DeduplicationID != all[i] {
						t.Fatalf("queued message %d is %s, want %s: the conversation's order is broken", i, m.DeduplicationID, all[i])
					}
				}
			}
			inOrder()
			if tt.wantRetryCalls == nil {
				return
			}
			if f.claims.completes != 6 {
				t.Errorf("completions %d; want events 1-6 queued and completed, 7-25 unrecorded", f.claims.completes)
			}
			f.q.failEntry, f.q.calls = nil, nil
			resp = f.do(t, req)
			if resp.StatusCode != 200 || strings.Count(resp.Body, `"duplicate"`) != 6 || strings.Count(resp.Body, `"accepted"`) != 20 {
				t.Fatalf("retry = %d %s, want 200 with 6 duplicates and 19 events accepted", resp.StatusCode, resp.Body)
			}
			if !slices.EqualFunc(f.q.calls, tt.wantRetryCalls, slices.Equal) {
				t.Errorf("retry's SendMessageBatch calls = %v, want %v", f.q.calls, tt.wantRetryCalls)
			}
			inOrder()
			if f.q.count() != 25 {
				t.Errorf("queued %d messages, want 25", f.q.count())
			}
		})
	}
}

// hangingClaims never answers a check before its context ends.
type hangingClaims struct{ claimStore }

func (hangingClaims) Check(ctx context.Context, _, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

// A hung AWS call must not hold the request past the Lambda deadline (or
// API Gateway's 30 s): the handler answers a retryable 503 before it, with
// no key recorded.
func TestAWSCallsEndBeforeTheDeadline(t *testing.T) {
	tests := []struct {
		name   string
		mod    func(f *fixture)
		req    events.APIGatewayV2HTTPRequest
		margin time.Duration
	}{
		{"SQS hangs on a batch", func(f *fixture) { f.q.hang = true }, whatsappBatch(acmeWhatsAppSecret, 2, 12), 0},
		{"SQS hangs on one event", func(f *fixture) { f.q.hang = true }, githubRequest("acme", acmeGitHubSecret, githubBody, "d-hang"), 0},
		{"DynamoDB hangs", func(f *fixture) { f.h.cfg.Claims = hangingClaims{f.claims} }, githubRequest("acme", acmeGitHubSecret, githubBody, "d-hang"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.h.cfg.SafetyMargin = 200 * time.Millisecond
			tt.mod(f)
			ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
			defer cancel()
			deadline, _ := ctx.Deadline()
			resp, _ := f.h.Handle(ctx, tt.req)
			if left := time.Until(deadline); left <= 0 {
				t.Errorf("Handle() returned %s after the deadline", -left)
			}
			if resp.StatusCode != 503 || resp.Headers["retry-after"] == "" {
				t.Errorf("Handle() = %d %v, want 503 with Retry-After", resp.StatusCode, resp.Headers)
			}
			if f.claims.completes != 0 {
				t.Errorf("completed %d keys of events not queued", f.claims.completes)
			}
		})
	}
}

// Bodies up to SQS's 1 MiB are queued whole; JSON rides as raw JSON (no
// escaping), so a 900 KB JSON body full of quotes still fits.
func TestLargeBodiesAreQueuedWhole(t *testing.T) {
	jsonBody := func(n int) string {
		head, item := `{"action":"opened","issue":{"number":42},"repository":{"full_name":"octo/hello"},"pad":[`, `"\"quoted\" <&>",`
		return head + strings.Repeat(item, (n-len(head))/len(item)) + `"end"]}`
	}
	tests := []struct {
		name string
		body string
		code int
	}{
		{"200 KB JSON", jsonBody(200_000), 200},
		{"900 KB JSON", jsonBody(900_000), 200},
		{"over 1 MiB", jsonBody(1_100_000), 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			resp := f.do(t, githubRequest("acme", acmeGitHubSecret, tt.body, "d-large"))
			if resp.StatusCode != tt.code {
				t.Fatalf("Handle(%d bytes) = %d %s, want %d", len(tt.body), resp.StatusCode, resp.Body, tt.code)
			}
			if tt.code != 200 {
				return
			}
			m := f.q.sent[0]
			if m.Size() > len(tt.body)+1024 {
				t.Errorf("queued %d bytes for a %d-byte JSON body: escaped, not raw", m.Size(), len(tt.body))
			}
			e, err := envelope.Decode(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			if raw, err := e.RawBody(); err != nil || string(raw) != tt.body {
				t.Errorf("RawBody() = %d bytes, %v; want the body as sent", len(raw), err)
			}
		})
	}
}
