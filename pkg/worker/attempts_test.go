package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookpack/hookpack/pkg/local/provision"
	"github.com/hookpack/hookpack/pkg/worker"
)

// conversationScript is the case both attempt tests run: one conversation,
// a head and nine followers, each failing a given number of times first.
type conversationScript struct {
	name        string
	maxAttempts int
	headFails   []int // statuses the head's first deliveries get
	followFails []int // statuses each follower's first deliveries get
	wantApplied []string
	wantDLQ     map[string]string // event id → reason substring
	wantDLQTry  int               // hookpack.attempts of the dead letter
}

func conversationScripts() []conversationScript {
	repeat := func(status, n int) []int { return slices.Repeat([]int{status}, n) }
	followers := []string{"f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9"}
	return []conversationScript{
		{
			// Old behaviour: f1's first attempt came at receive 21 ≥ 21,
			// so it was dead-lettered after one real attempt.
			name: "head fails 20 times then succeeds", maxAttempts: 21,
			headFails: repeat(http.StatusServiceUnavailable, 20), followFails: repeat(http.StatusServiceUnavailable, 1),
			wantApplied: append([]string{"h"}, followers...),
		},
		{
			// Each follower still gets its 5 attempts after waiting
			// through the head's 5 and the earlier followers'.
			name: "head poisoned, followers get their full attempts", maxAttempts: 5,
			headFails:   append(repeat(http.StatusServiceUnavailable, 4), http.StatusBadRequest),
			followFails: repeat(http.StatusServiceUnavailable, 4),
			wantApplied: followers,
			wantDLQ:     map[string]string{"h": "target rejected the event: answered 400"}, wantDLQTry: 5,
		},
	}
}

func (c conversationScript) ids() []string {
	return []string{"h", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9"}
}

// statuses returns the scripted failure statuses of event id.
func (c conversationScript) statuses(id string) []int {
	if id == "h" {
		return c.headFails
	}
	return c.followFails
}

// The event source mapping on fakes: each round receives the conversation's
// first ten messages (SQS FIFO order), every one of them a receive.
func TestBlockedFollowersKeepTheirAttempts(t *testing.T) {
	for _, tt := range conversationScripts() {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *worker.Config) { c.MaxAttempts = tt.maxAttempts })
			fails := map[string][]int{}
			for _, id := range tt.ids() {
				fails[id] = slices.Clone(tt.statuses(id))
			}
			var applied []string
			f.reg.Handle(worker.Any, worker.Any, func(_ context.Context, ev *worker.Event) error {
				if s := fails[ev.EventID]; len(s) > 0 {
					fails[ev.EventID] = s[1:]
					if s[0] < 500 {
						return worker.Permanent(fmt.Errorf("target rejected the event: answered %d", s[0]))
					}
					return fmt.Errorf("target answered %d", s[0])
				}
				applied = append(applied, ev.EventID)
				return nil
			})
			queue := tt.ids()
			receives := map[string]int{}
			maxVisibility := map[string]int32{}
			for round := 0; len(queue) > 0; round++ {
				if round > 500 {
					t.Fatalf("not drained after 500 rounds; left %v", queue)
				}
				var ev events.SQSEvent
				for _, id := range queue[:min(10, len(queue))] {
					receives[id]++
					ev.Records = append(ev.Records, rec(t, env(id, "conv"), receives[id]))
				}
				resp, _ := f.h.Handle(context.Background(), ev)
				left := map[string]bool{}
				for _, id := range failed(resp) {
					left[strings.TrimPrefix(id, "m-")] = true
				}
				for id, v := range f.sqs.visibility {
					id = strings.TrimPrefix(id, "rh-")
					if left[id] && fails[id] != nil && len(fails[id]) < len(tt.statuses(id)) {
						maxVisibility[id] = max(maxVisibility[id], v)
					}
				}
				clear(f.sqs.visibility)
				queue = slices.DeleteFunc(queue, func(id string) bool { return !left[id] })
			}
			if !slices.Equal(applied, tt.wantApplied) {
				t.Errorf("applied %v, want %v", applied, tt.wantApplied)
			}
			var dead []string
			for _, s := range f.sqs.sent {
				dead = append(dead, s.msg.Attributes[worker.AttrEventKey])
				id := strings.TrimPrefix(s.msg.Attributes[worker.AttrEventKey], "acme#stripe#")
				if want, ok := tt.wantDLQ[id]; !ok || !strings.Contains(s.msg.Attributes[worker.AttrReason], want) ||
					s.msg.Attributes[worker.AttrAttempts] != strconv.Itoa(tt.wantDLQTry) {
					t.Errorf("dead letter %s: attributes %v; want reason %q after %d attempts", id, s.msg.Attributes, want, tt.wantDLQTry)
				}
			}
			if len(dead) != len(tt.wantDLQ) {
				t.Errorf("dead letters %v, want %d", dead, len(tt.wantDLQ))
			}
			// A follower's own retries back off from its own first attempt
			// (base 4 s, jitter 0: 2 s, 4 s, 8 s, …), not from the head's.
			limit := worker.Retry{Base: 4 * time.Second, Jitter: fixedJitter(0)}.Delay(len(tt.followFails), 0)
			for _, id := range tt.ids()[1:] {
				if v := maxVisibility[id]; int64(v) > int64(limit.Seconds()) {
					t.Errorf("follower %s backed off up to %ds, want at most %s", id, v, limit)
				}
			}
		})
	}
}

// The same on moto: real FIFO receives (whose ApproximateReceiveCount
// climbs with every batch the followers wait in), the ledger in DynamoDB,
// and maxReceiveCount at MinMaxReceiveCount, so SQS's redrive must never
// take a follower. Retries are immediate (visibility set to 0 by the
// worker, in order), which moto's FIFO receive serves in group order.
func TestBlockedFollowersKeepTheirAttemptsOnMoto(t *testing.T) {
	for _, tt := range conversationScripts() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStackWith(t, provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: worker.MinMaxReceiveCount(tt.maxAttempts)})
			ids := map[string]string{} // message id → event id
			for _, id := range tt.ids() {
				s.target.failNext(id, tt.statuses(id)...)
				ids[s.send(s.env(id, "c1"), "")] = id
			}
			cfg := s.workerConfig(nil, s.forwardRegistry())
			cfg.MaxAttempts = tt.maxAttempts
			s.drainWithin(worker.New(cfg), 400)

			_, applied, _, absorbed, _ := s.target.snapshot()
			if !slices.Equal(applied["c1"], tt.wantApplied) || absorbed != 0 {
				t.Errorf("applied %v (absorbed %d), want %v", applied["c1"], absorbed, tt.wantApplied)
			}
			dlq := s.receive(s.pair.DLQURL)
			if len(dlq.Records) != len(tt.wantDLQ) {
				t.Errorf("DLQ holds %d messages, want %d", len(dlq.Records), len(tt.wantDLQ))
			}
			for _, r := range dlq.Records {
				attr := func(k string) string { return aws.ToString(r.MessageAttributes[k].StringValue) }
				id := ids[attr(worker.AttrMessageID)]
				want, ok := tt.wantDLQ[id]
				if !ok || !strings.Contains(attr(worker.AttrReason), want) || attr(worker.AttrAttempts) != strconv.Itoa(tt.wantDLQTry) {
					t.Errorf("dead letter %q: reason %q after %q attempts; want %q after %d", id, attr(worker.AttrReason), attr(worker.AttrAttempts), want, tt.wantDLQTry)
				}
			}
		})
	}
}
