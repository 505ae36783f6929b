package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Options point the demo at a running stack.
type Options struct {
	BaseURL   string // the local HTTP API
	TargetURL string // the local target service
	Tenant    string
	Providers map[string]webhook.Config
	// SQS reads the tenant's DLQ at DLQURL (scripts/replay's listing: every
	// message it receives is made visible again).
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
	// The target's counters span everything it ever received: the report
	// counts from here on.
	_, before, err := target(ctx, client, o.TargetURL, run)
	if err != nil {
		return Report{}, err
	}
	dlq := replay.New(o.SQS, nil, replay.Options{Visibility: 10 * time.Second})
	s := &Sender{BaseURL: o.BaseURL, Tenant: o.Tenant, Providers: o.Providers, Registry: provider.Registry(), Client: client, Now: time.Now}
	seq, burst := Plan(run)
	fmt.Fprintf(o.Out, "Sending %d deliveries, then %d identical ones at once (run %s)\n  ", len(seq), o.Burst, run)
	answers, err := s.SendAll(ctx, seq, burst, o.Burst, func(a Answer) {
		fmt.Fprint(o.Out, map[string]string{"accepted": "+", "duplicate": "="}[a.Outcome]+mark(a.Outcome))
	})
	fmt.Fprintln(o.Out, "   (+ accepted, = duplicate, ! rejected)")
	if err != nil {
		return Report{Answers: answers}, err
	}
	want := Expected(answers)
	fmt.Fprintf(o.Out, "Waiting for %d effects and 1 dead letter ", want)
	deadline := time.Now().Add(o.Wait)
	var rep Report
	for {
		rep = Report{Answers: answers}
		var after devstack.Stats
		if rep.Applied, after, err = target(ctx, client, o.TargetURL, run); err != nil {
			return rep, err
		}
		rep.Stats = devstack.Stats{Applied: len(rep.Applied), Duplicates: after.Duplicates - before.Duplicates,
			Rejected: after.Rejected - before.Rejected, Refused: after.Refused - before.Refused}
		if rep.Dead, err = deadLetters(ctx, dlq, o.DLQURL, run); err != nil {
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
	case "accepted", "duplicate":
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

// deadLetters lists the DLQ as scripts/replay does and returns this run's
// dead letters. A receive cannot ask for a zero visibility timeout (the
// SDK omits a zero VisibilityTimeout, so the queue's default applies):
// the listing hides what it receives and then makes it visible again.
func deadLetters(ctx context.Context, r *replay.Replayer, dlq, run string) ([]DeadLetter, error) {
	items, err := r.List(ctx, dlq, replay.Filter{})
	if err != nil {
		return nil, fmt.Errorf("read DLQ: %w", err)
	}
	var dead []DeadLetter
	for _, it := range items {
		if !strings.Contains(it.EventKey, run) && !strings.Contains(it.EventID, run) {
			continue
		}
		dead = append(dead, DeadLetter{EventID: it.EventKey, Reason: it.Reason, Attempts: it.Attempts})
	}
	return dead, nil
}
