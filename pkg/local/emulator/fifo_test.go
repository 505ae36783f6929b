package emulator_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/provision"
)

// fifo is one FIFO queue pair under test and the bodies of what it returned.
type fifo struct {
	t      *testing.T
	client *sqs.Client
	pair   provision.Pair
}

func newFIFO(t *testing.T, maxReceiveCount int) *fifo {
	t.Helper()
	client := sqs.NewFromConfig(awstest.Config(t, awstest.Moto(t)))
	pair, err := provision.QueuePair(context.Background(), client, awstest.Name(t), provision.PairOptions{VisibilityTimeout: 30, MaxReceiveCount: maxReceiveCount})
	if err != nil {
		t.Fatal(err)
	}
	return &fifo{t: t, client: client, pair: pair}
}

// send puts one message per body on group g, in order.
func (f *fifo) send(g string, bodies ...string) {
	f.t.Helper()
	for _, b := range bodies {
		_, err := f.client.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(f.pair.URL), MessageBody: aws.String(b),
			MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(b),
		})
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

// receive receives up to max messages from url, hiding them for vis seconds.
func (f *fifo) receive(url string, max, vis int32) []types.Message {
	f.t.Helper()
	out, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: max, VisibilityTimeout: vis,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out.Messages
}

func (f *fifo) setVisibility(m types.Message, vis int32) {
	f.t.Helper()
	_, err := f.client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(f.pair.URL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: vis,
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fifo) delete(m types.Message) {
	f.t.Helper()
	_, err := f.client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(f.pair.URL), ReceiptHandle: m.ReceiptHandle})
	if err != nil {
		f.t.Fatal(err)
	}
}

func bodies(msgs []types.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = aws.ToString(m.Body)
	}
	return out
}

// expect fails unless got's bodies are want.
func (f *fifo) expect(step string, got []types.Message, want ...string) {
	f.t.Helper()
	if b := bodies(got); !slices.Equal(b, want) && !(len(b) == 0 && len(want) == 0) {
		f.t.Fatalf("%s: received %q, want %q", step, b, want)
	}
}

// visibilityLapse outlasts a 1-second visibility timeout.
const visibilityLapse = 1300 * time.Millisecond

// TestFIFOConformance pins the FIFO semantics AWS documents for a message
// group, which the project's moto launcher restores (moto 5.2.1 gets the
// second case wrong): a group yields nothing while any message of it is in
// flight, then yields in order; redrive happens at maxReceiveCount.
func TestFIFOConformance(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, f *fifo)
	}{{
		name: "receive 3, extend the first: the others wait for it",
		run: func(t *testing.T, f *fifo) {
			f.send("g", "m1", "m2", "m3")
			got := f.receive(f.pair.URL, 10, 1)
			f.expect("first receive", got, "m1", "m2", "m3")
			f.setVisibility(got[0], 30)
			time.Sleep(visibilityLapse) // m2 and m3 are visible again, m1 in flight
			f.expect("while m1 is in flight", f.receive(f.pair.URL, 10, 1))
			f.setVisibility(got[0], 0)
			f.expect("after m1 returned", f.receive(f.pair.URL, 10, 30), "m1", "m2", "m3")
		},
	}, {
		name: "in-flight messages visible together come back in order",
		run: func(t *testing.T, f *fifo) {
			want := []string{"m1", "m2", "m3", "m4", "m5", "m6"}
			f.send("g", want...)
			f.expect("first receive", f.receive(f.pair.URL, 10, 1), want...)
			time.Sleep(visibilityLapse)
			f.expect("after the visibility timeout", f.receive(f.pair.URL, 10, 30), want...)
		},
	}, {
		name: "visible together, received one at a time: head first",
		run: func(t *testing.T, f *fifo) {
			f.send("g", "m1", "m2", "m3")
			f.expect("first receive", f.receive(f.pair.URL, 10, 1), "m1", "m2", "m3")
			time.Sleep(visibilityLapse)
			for _, want := range []string{"m1", "m2", "m3"} {
				got := f.receive(f.pair.URL, 1, 30)
				f.expect("one at a time", got, want)
				f.delete(got[0])
			}
		},
	}, {
		name: "a later send waits while its group is in flight",
		run: func(t *testing.T, f *fifo) {
			f.send("g", "m1")
			first := f.receive(f.pair.URL, 10, 30)
			f.expect("first receive", first, "m1")
			f.send("g", "m2")
			f.send("other", "o1")
			f.expect("while m1 is in flight", f.receive(f.pair.URL, 10, 30), "o1")
			f.delete(first[0])
			f.expect("after m1 is deleted", f.receive(f.pair.URL, 10, 30), "m2")
		},
	}, {
		name: "redrive to the DLQ at maxReceiveCount, then the group goes on",
		run: func(t *testing.T, f *fifo) {
			f.send("g", "m1", "m2")
			for i := range 2 {
				f.expect(fmt.Sprintf("receive %d", i+1), f.receive(f.pair.URL, 1, 1), "m1")
				time.Sleep(visibilityLapse)
			}
			got := f.receive(f.pair.URL, 10, 30)
			f.expect("after maxReceiveCount", got, "m2")
			if n := got[0].Attributes["ApproximateReceiveCount"]; n != "1" {
				t.Errorf("m2 ApproximateReceiveCount = %s, want 1", n)
			}
			dead := f.receive(f.pair.DLQURL, 10, 30)
			f.expect("dead-letter queue", dead, "m1")
			if g := dead[0].Attributes["MessageGroupId"]; g != "g" {
				t.Errorf("dead letter MessageGroupId = %q, want g", g)
			}
		},
	}, {
		name: "concurrent receives never share a message",
		run: func(t *testing.T, f *fifo) {
			const n = 40
			for i := range n {
				f.send(fmt.Sprintf("g%02d", i), fmt.Sprintf("m%02d", i))
			}
			var mu sync.Mutex
			seen := map[string]int{}
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 10 {
						out, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
							QueueUrl: aws.String(f.pair.URL), MaxNumberOfMessages: 3, VisibilityTimeout: 30,
						})
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						for _, b := range bodies(out.Messages) {
							seen[b]++
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			for b, c := range seen {
				if c != 1 {
					t.Errorf("%s received %d times while in flight", b, c)
				}
			}
			if len(seen) != n {
				t.Errorf("received %d distinct messages, want %d", len(seen), n)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFIFO(t, 2))
		})
	}
}

// TestFIFOLongPollWakesWhenGroupUnlocks: a long poll blocked on a locked
// group returns as soon as the group's in-flight message is deleted, not at
// the end of its wait.
func TestFIFOLongPollWakesWhenGroupUnlocks(t *testing.T) {
	f := newFIFO(t, 5)
	f.send("g", "m1", "m2")
	first := f.receive(f.pair.URL, 1, 30)
	f.expect("first receive", first, "m1")
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = f.client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(f.pair.URL), ReceiptHandle: first[0].ReceiptHandle})
	}()
	start := time.Now()
	out, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(f.pair.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.expect("long poll", out.Messages, "m2")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("long poll returned after %v, want soon after the delete", d)
	}
}

// TestFIFODeduplicationOutlivesDeletion: a deduplication id holds for five
// minutes from its first send, as in AWS, even after that message was
// received and deleted (moto 5.2.1 alone only compares with the messages
// still queued, so an SDK retry of a send whose answer was lost became a
// second message once the first had been processed). Within the queue's
// DeduplicationScope (the message group for provision's queues) only.
func TestFIFODeduplicationOutlivesDeletion(t *testing.T) {
	f := newFIFO(t, 5)
	ctx := context.Background()
	send := func(group, dedup, body string) {
		t.Helper()
		if _, err := f.client.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(f.pair.URL), MessageBody: aws.String(body),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(dedup),
		}); err != nil {
			t.Fatal(err)
		}
	}
	send("g1", "d1", "first")
	got := f.receive(f.pair.URL, 10, 30)
	f.expect("first send", got, "first")
	f.delete(got[0])
	send("g1", "d1", "retried send") // same id, the first copy already deleted
	send("g2", "d1", "other group")  // same id in another group: its own scope
	f.expect("after the retry", f.receive(f.pair.URL, 10, 30), "other group")
}

// TestFIFOReceiveRequestAttemptID pins ReceiveRequestAttemptId as AWS
// documents it, which the launcher adds to moto 5.2.1: a receive retried
// with the same id returns the same messages and receipt handles although
// they are in flight, another id finds them in flight, and once one of
// them was deleted or its visibility changed the id returns nothing old.
func TestFIFOReceiveRequestAttemptID(t *testing.T) {
	f := newFIFO(t, 5)
	ctx := context.Background()
	receive := func(attempt string) []types.Message {
		t.Helper()
		out, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(f.pair.URL), MaxNumberOfMessages: 10, VisibilityTimeout: 300, WaitTimeSeconds: 1,
			ReceiveRequestAttemptId: aws.String(attempt),
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	f.send("g1", "m1", "m2")
	f.send("g2", "n1")
	first := receive("a1")
	f.expect("first receive", first, "m1", "m2", "n1")
	again := receive("a1")
	f.expect("the same attempt again", again, "m1", "m2", "n1")
	for i := range first {
		if aws.ToString(again[i].ReceiptHandle) != aws.ToString(first[i].ReceiptHandle) {
			t.Errorf("retry's receipt handle of %s = %s, want the first's %s", aws.ToString(first[i].Body), aws.ToString(again[i].ReceiptHandle), aws.ToString(first[i].ReceiptHandle))
		}
	}
	f.expect("another attempt", receive("a2"))
	f.delete(again[2])
	f.expect("the attempt after a deletion", receive("a1"))
	f.setVisibility(first[0], 0)
	f.setVisibility(first[1], 0)
	f.expect("a new attempt after the group was made visible", receive("a3"), "m1", "m2")
	f.expect("the first attempt, its messages made visible since", receive("a1"))
}
