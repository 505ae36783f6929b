package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/queue"
)

// flakyClaims fails the first claim of each key in fail, as a throttled
// DynamoDB would.
type flakyClaims struct {
	claimStore
	mu   sync.Mutex
	fail map[string]bool
}

func (c *flakyClaims) Claim(ctx context.Context, key, v string) (idempotency.Claim, error) {
	c.mu.Lock()
	fail := c.fail[key]
	delete(c.fail, key)
	c.mu.Unlock()
	if fail {
		return idempotency.Claim{}, errors.New("dynamodb: ProvisionedThroughputExceededException")
	}
	return c.claimStore.Claim(ctx, key, v)
}

// A WhatsApp delivery of conversation 1 (events 1, 2, 3) interleaved with
// conversation 2 (events 1, 2): whatever stops an event of conversation 1
// from being claimed holds its later events back, unqueued and unclaimed,
// conversation 2 goes on, and the sender's retry queues 1, 2, 3 in order.
func TestBatchKeepsConversationOrderAtClaim(t *testing.T) {
	req := whatsappDelivery(acmeWhatsAppSecret, [][2]int{{1, 1}, {2, 1}, {1, 2}, {1, 3}, {2, 2}})
	key := func(conv, n int) string { return fmt.Sprintf("acme#whatsapp#wamid.%d.%d", conv, n) }
	c1, c2 := dedupIDs(1, 1, 2, 3), dedupIDs(2, 1, 2)
	tests := []struct {
		name       string
		failClaim  string                                     // a key whose first claim fails
		held       func(t *testing.T, s claimStore, k string) // another delivery's claim on key(1, 1)
		wantCode   int
		wantQueued []string // after the first request, in order
		wantHeld   int      // events reported held_back (409 answers list them)
		retryAfter time.Duration
		noRetry    bool // the retry gets the same answer
	}{
		{
			name:       "claim of event 1 fails: 503, nothing of conversation 1 queued",
			failClaim:  key(1, 1),
			wantCode:   503,
			wantQueued: c2,
		},
		{
			name:       "claim of event 2 fails: 503, event 1 queued, event 3 held back",
			failClaim:  key(1, 2),
			wantCode:   503,
			wantQueued: []string{c1[0], c2[0], c2[1]},
		},
		{
			name: "event 1 in flight under another live lease: 409, events 2 and 3 held back",
			held: func(t *testing.T, s claimStore, k string) {
				if _, err := s.Claim(context.Background(), k, ""); err != nil {
					t.Fatal(err)
				}
			},
			wantCode:   409,
			wantQueued: c2,
			wantHeld:   2,
			retryAfter: idempotency.DefaultLease + time.Second,
		},
		{
			// A reused id never queues: holding its conversation behind it
			// would block the conversation for good.
			name: "event 1's id reused with another payload: 409, events 2 and 3 queued",
			held: func(t *testing.T, s claimStore, k string) {
				if _, err := s.Claim(context.Background(), k, "another-digest"); err != nil {
					t.Fatal(err)
				}
			},
			wantCode:   409,
			wantQueued: []string{c2[0], c1[1], c1[2], c2[1]},
			noRetry:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.h.cfg.Claims = &flakyClaims{claimStore: f.claims, fail: map[string]bool{tt.failClaim: true}}
			if tt.held != nil {
				tt.held(t, f.claims.claimStore, key(1, 1))
			}
			resp := f.do(t, req)
			if resp.StatusCode != tt.wantCode || resp.Headers["retry-after"] == "" && !tt.noRetry {
				t.Fatalf("Handle() = %d %v %s, want %d with Retry-After", resp.StatusCode, resp.Headers, resp.Body, tt.wantCode)
			}
			if got := sentIDs(f.q); !slices.Equal(got, tt.wantQueued) {
				t.Fatalf("queued %v, want %v: a later event of conversation 1 overtook one not queued", got, tt.wantQueued)
			}
			if got := strings.Count(resp.Body, `"status":"held_back"`); got != tt.wantHeld {
				t.Errorf("Handle() reports %d events held back, want %d: %s", got, tt.wantHeld, resp.Body)
			}
			// Every event of conversation 1 not queued (but the one another
			// delivery holds) is free to be claimed again.
			for n, id := range c1 {
				if slices.Contains(tt.wantQueued, id) || n == 0 && tt.held != nil {
					continue
				}
				c, err := f.claims.claimStore.Claim(context.Background(), key(1, n+1), "")
				if err != nil {
					t.Fatalf("event %d's claim was left behind: Claim() = %v", n+1, err)
				}
				if err := f.claims.claimStore.Release(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			}
			if tt.noRetry {
				return
			}

			*f.now = f.now.Add(tt.retryAfter)
			if resp := f.do(t, req); resp.StatusCode != 200 {
				t.Fatalf("retry = %d %s, want 200", resp.StatusCode, resp.Body)
			}
			var conv1 []string
			for _, id := range sentIDs(f.q) {
				if slices.Contains(c1, id) {
					conv1 = append(conv1, id)
				}
			}
			if !slices.Equal(conv1, c1) {
				t.Errorf("conversation 1 queued as %v, want %v", conv1, c1)
			}
			if f.q.count() != 5 {
				t.Errorf("queued %d messages, want 5", f.q.count())
			}
		})
	}
}

func sentIDs(q *fakeQueue) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]string, len(q.sent))
	for i, m := range q.sent {
		out[i] = m.DeduplicationID
	}
	return out
}

func TestHoldBack(t *testing.T) {
	claimed := claimState{claimed: true}
	failed := claimState{err: errUnavailable}
	tests := []struct {
		name     string
		groups   string // one conversation per event, a letter each
		keys     string // one key per event, a letter each
		st       []claimState
		wantSend []int
		wantHeld []int
	}{
		{"all claimed", "aab", "xyz", []claimState{claimed, claimed, claimed}, []int{0, 1, 2}, nil},
		{"a failed claim stops its conversation only", "abaa", "wxyz", []claimState{failed, claimed, claimed, claimed}, []int{1}, []int{2, 3}},
		{"a later failure stops what comes after it", "aaa", "xyz", []claimState{claimed, failed, claimed}, []int{0}, []int{2}},
		{"a duplicate is no stop", "aa", "xy", []claimState{{out: outDuplicate}, claimed}, []int{1}, nil},
		{"in flight elsewhere is a stop", "aa", "xy", []claimState{{out: outInFlight}, claimed}, nil, []int{1}},
		{"a reused id is no stop (it never queues)", "aa", "xy", []claimState{{out: outReused}, claimed}, []int{1}, nil},
		{"an event not claimed keeps its outcome behind a stop", "aaa", "xyz", []claimState{failed, {out: outDuplicate}, claimed}, nil, []int{2}},
		{"a repeat of a key this delivery claimed is no stop", "aaa", "xxy", []claimState{{out: outInFlight}, claimed, claimed}, []int{1, 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := make([]pending, len(tt.st))
			for i := range msgs {
				msgs[i] = pending{key: tt.keys[i : i+1], msg: queue.Message{GroupID: tt.groups[i : i+1]}}
			}
			st := slices.Clone(tt.st)
			send := holdBack(msgs, st)
			var held []int
			for i, s := range st {
				if s.out == outHeldBack {
					held = append(held, i)
				} else if s.out != tt.st[i].out {
					t.Errorf("event %d's outcome became %q, want %q", i, s.out, tt.st[i].out)
				}
			}
			if !slices.Equal(send, tt.wantSend) || !slices.Equal(held, tt.wantHeld) {
				t.Errorf("holdBack(%s) sends %v, holds back %v; want %v and %v", tt.groups, send, held, tt.wantSend, tt.wantHeld)
			}
		})
	}
}
