package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/webhook"
	"github.com/hookpack/hookpack/pkg/worker"
)

// Options point the demo at a running stack.
type Options struct {
	BaseURL   string // the local HTTP API
	TargetURL string // the local target service
	Tenant    string
	Providers map[string]webhook.Config
	// SQS reads the tenant's DLQ at DLQURL.
	SQS    *sqs.Client
	DLQURL string
	// Burst is the number of identical concurrent deliveries (default 20).
	Burst int
	// Wait bounds how long to wait for the effects (default 2 minutes).
	Wait time.Duration
	Out  io.Writer
}

// Run sends the plan and waits until the target has applied every effect
// the accepted deliveries owe and the poison event is dead-lettered, then
// returns what the system did.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.Burst == 0 {
		o.Burst = 20
	}
	if o.Wait == 0 {
		o.Wait = 2 * time.Minute
	}
	run := fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff)
	client := &http.Client{Timeout: 15 * time.Second}
	s := &Sender{BaseURL: o.BaseURL, Tenant: o.Tenant, Providers: o.Providers, Registry: provider.Registry(), Client: client, Now: time.Now}
	seq, burst := Plan(run)
	fmt.Fprintf(o.Out, "Sending %d deliveries, then %d identical ones at once (run %s)\n  ", len(seq), o.Burst, run)
	answers, err := s.SendAll(ctx, seq, burst, o.Burst, func(a Answer) {
		fmt.Fprint(o.Out, map[string]string{"accepted": "+", "duplicate": "=", "in_flight": "~"}[a.Outcome]+mark(a.Outcome))
	})
	fmt.Fprintln(o.Out, "   (+ accepted, = duplicate, ~ in flight, ! rejected)")
	if err != nil {
		return Report{Answers: answers}, err
	}
	want := Expected(answers)
	fmt.Fprintf(o.Out, "Waiting for %d effects and 1 dead letter ", want)
	deadline := time.Now().Add(o.Wait)
	var rep Report
	for {
		rep = Report{Answers: answers}
		if rep.Applied, rep.Stats, err = target(ctx, client, o.TargetURL, run); err != nil {
			return rep, err
		}
		if rep.Dead, err = deadLetters(ctx, o.SQS, o.DLQURL, run); err != nil {
			return rep, err
		}
		fmt.Fprintf(o.Out, "\rWaiting for %d effects and 1 dead letter: %d applied, %d dead-lettered ", want, len(rep.Applied), len(rep.Dead))
		if len(rep.Applied) >= want && len(rep.Dead) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(o.Out)
			return rep, fmt.Errorf("timed out after %s: %d of %d effects applied, %d dead-lettered", o.Wait, len(rep.Applied), want, len(rep.Dead))
		}
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	fmt.Fprintln(o.Out, "✓")
	return rep, nil
}

func mark(outcome string) string {
	switch outcome {
	case "accepted", "duplicate", "in_flight":
		return ""
	}
	return "!"
}

// target reads the applied effects of this run and the counters.
func target(ctx context.Context, c *http.Client, base, run string) ([]devstack.Applied, devstack.Stats, error) {
	var all []devstack.Applied
	var stats devstack.Stats
	for path, v := range map[string]any{"/applied": &all, "/stats": &stats} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			return nil, stats, fmt.Errorf("query target service: %w", err)
		}
		err = json.NewDecoder(resp.Body).Decode(v)
		resp.Body.Close()
		if err != nil {
			return nil, stats, fmt.Errorf("decode target %s: %w", path, err)
		}
	}
	var mine []devstack.Applied
	for _, a := range all {
		if strings.Contains(a.EventID, run) || strings.Contains(a.IdempotencyKey, run) {
			mine = append(mine, a)
		}
	}
	return mine, stats, nil
}

// deadLetters peeks at the DLQ (receiving with a zero visibility timeout,
// so the messages stay for scripts/replay) and returns this run's.
func deadLetters(ctx context.Context, c *sqs.Client, dlq, run string) ([]DeadLetter, error) {
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(dlq), MaxNumberOfMessages: 10, VisibilityTimeout: 0,
		MessageAttributeNames: []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("read DLQ: %w", err)
	}
	var dead []DeadLetter
	for _, m := range out.Messages {
		key := attr(m, worker.AttrEventKey)
		if !strings.Contains(key, run) && !strings.Contains(aws.ToString(m.Body), run) {
			continue
		}
		dead = append(dead, DeadLetter{EventID: key, Reason: attr(m, worker.AttrReason), Attempts: attr(m, worker.AttrAttempts)})
	}
	return dead, nil
}

func attr(m types.Message, name string) string {
	if v, ok := m.MessageAttributes[name]; ok {
		return aws.ToString(v.StringValue)
	}
	return ""
}
