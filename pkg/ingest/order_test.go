package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/hookpack/hookpack/pkg/queue"
)

// flakyClaims fails the first check of each key in fail, as a throttled
// DynamoDB would.
type flakyClaims struct {
	claimStore
	mu   sync.Mutex
	fail map[string]bool
}

func (c *flakyClaims) Check(ctx context.Context, key, v string) error {
	c.mu.Lock()
	fail := c.fail[key]
	delete(c.fail, key)
	c.mu.Unlock()
	if fail {
		return errors.New("dynamodb: ProvisionedThroughputExceededException")
	}
	return c.claimStore.Check(ctx, key, v)
}

// A WhatsApp delivery of conversation 1 (events 1, 2, 3) interleaved with
// conversation 2 (events 1, 2): whatever stops an event of conversation 1
// from being sent holds its later events back, unqueued and unrecorded,
// conversation 2 goes on, and the sender's retry queues 1, 2, 3 in order.
func TestBatchKeepsConversationOrderAtCheck(t *testing.T) {
	req := whatsappDelivery(acmeWhatsAppSecret, [][2]int{{1, 1}, {2, 1}, {1, 2}, {1, 3}, {2, 2}})
	key := func(conv, n int) string { return fmt.Sprintf("acme#whatsapp#wamid.%d.%d", conv, n) }
	c1, c2 := dedupIDs(1, 1, 2, 3), dedupIDs(2, 1, 2)
	tests := []struct {
		name       string
		failCheck  string                         // a key whose first check fails
		before     func(t *testing.T, f *fixture) // what another delivery did first
		wantCode   int
		wantQueued []string // after the first request, in order
		noRetry    bool     // the retry gets the same answer
	}{
		{
			name:       "check of event 1 fails: 503, nothing of conversation 1 queued",
			failCheck:  key(1, 1),
			wantCode:   503,
			wantQueued: c2,
		},
		{
			name:       "check of event 2 fails: 503, event 1 queued, event 3 held back",
			failCheck:  key(1, 2),
			wantCode:   503,
			wantQueued: []string{c1[0], c2[0], c2[1]},
		},
		{
			// Another delivery of event 1 sent it and has not completed
			// its key (it is still running, or its completion failed):
			// this one sends it again, and SQS keeps the first copy.
			name: "event 1 sent by another delivery, its key not completed: 200, queued once, in order",
			before: func(t *testing.T, f *fixture) {
				f.claims.failComplete = true
				if resp := f.do(t, whatsappDelivery(acmeWhatsAppSecret, [][2]int{{1, 1}})); resp.StatusCode != 200 {
					t.Fatalf("the other delivery = %d %s", resp.StatusCode, resp.Body)
				}
				f.claims.failComplete = false
			},
			wantCode:   200,
			wantQueued: []string{c1[0], c2[0], c1[1], c1[2], c2[1]},
		},
		{
			// A reused id never queues: holding its conversation behind it
			// would block the conversation for good.
			name: "event 1's id reused with another payload: 409, events 2 and 3 queued",
			before: func(t *testing.T, f *fixture) {
				if err := f.claims.Memory.Complete(context.Background(), key(1, 1), "another-digest"); err != nil {
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
			if tt.before != nil {
				tt.before(t, f)
			}
			f.h.cfg.Claims = &flakyClaims{claimStore: f.claims, fail: map[string]bool{tt.failCheck: true}}
			resp := f.do(t, req)
			if resp.StatusCode != tt.wantCode || tt.wantCode == 503 && resp.Headers["retry-after"] == "" {
				t.Fatalf("Handle() = %d %v %s, want %d (503s with Retry-After)", resp.StatusCode, resp.Headers, resp.Body, tt.wantCode)
			}
			if got := sentIDs(f.q); !slices.Equal(got, tt.wantQueued) {
				t.Fatalf("queued %v, want %v: a later event of conversation 1 overtook one not queued", got, tt.wantQueued)
			}
			// Every event of conversation 1 not queued is free.
			for n, id := range c1 {
				if slices.Contains(tt.wantQueued, id) || n == 0 && tt.before != nil {
					continue
				}
				if err := f.claims.Memory.Check(context.Background(), key(1, n+1), ""); err != nil {
					t.Fatalf("event %d's key was recorded though it was not queued: Check() = %v", n+1, err)
				}
			}
			if tt.noRetry {
				return
			}

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

// A key that appears twice in one delivery is read once: its later event
// is a duplicate of the first, or a reused id with another payload.
func TestCheckReadsARepeatedKeyOnce(t *testing.T) {
	f := newFixture(t)
	msgs := []pending{{key: "k", validation: "a"}, {key: "k", validation: "a"}, {key: "k", validation: "b"}, {key: "j", validation: "a"}}
	st := f.h.check(context.Background(), msgs)
	got := make([]string, len(st))
	for i, s := range st {
		got[i] = fmt.Sprintf("%v %s %s", s.free, s.out, s.stored)
	}
	want := []string{"true  ", "false duplicate ", "false id_reused a", "true  "}
	if !slices.Equal(got, want) || f.claims.checks != 2 {
		t.Errorf("check() = %q after %d reads, want %q after 2", got, f.claims.checks, want)
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
	claimed := keyState{free: true}
	failed := keyState{err: errUnavailable}
	tests := []struct {
		name     string
		groups   string // one conversation per event, a letter each
		keys     string // one key per event, a letter each
		st       []keyState
		wantSend []int
		wantHeld []int
	}{
		{"all free", "aab", "xyz", []keyState{claimed, claimed, claimed}, []int{0, 1, 2}, nil},
		{"a failed check stops its conversation only", "abaa", "wxyz", []keyState{failed, claimed, claimed, claimed}, []int{1}, []int{2, 3}},
		{"a later failure stops what comes after it", "aaa", "xyz", []keyState{claimed, failed, claimed}, []int{0}, []int{2}},
		{"a duplicate is no stop", "aa", "xy", []keyState{{out: outDuplicate}, claimed}, []int{1}, nil},
		{"a reused id is no stop (it never queues)", "aa", "xy", []keyState{{out: outReused}, claimed}, []int{1}, nil},
		{"an event not free keeps its outcome behind a stop", "aaa", "xyz", []keyState{failed, {out: outDuplicate}, claimed}, nil, []int{2}},
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
