package rehearsal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

// planned is one delivery to send.
type planned struct {
	ev     samples.Event
	poison bool
}

// accepted is an event ingest accepted, in the order accepted.
type accepted struct {
	id     string
	poison bool
}

// Delivery is one request sent to the API and its answer.
type Delivery struct {
	Name, Method string
	Status       int
	Body         string
	// Want is the answer the rehearsal expected ("accepted", "duplicate",
	// or a handshake's status and body).
	Want string
}

// Rehearsal's own events, all Stripe events signed like the sample: three
// of one conversation (the second fails once at the target, so the third
// must wait for its retry), one too large for SQS (offloaded to the payload
// bucket), and one the target refuses (dead-lettered with the reason).
var extra = []struct {
	name, id, customer, description string
	size                            int
	poison                          bool
}{
	{name: "conversation-1", id: "evt_rehearsal_1", customer: "cus_rehearsal"},
	{name: "conversation-2-flaky", id: "evt_rehearsal_2", customer: "cus_rehearsal", description: devstack.FlakyMarker},
	{name: "conversation-3", id: "evt_rehearsal_3", customer: "cus_rehearsal"},
	{name: "large", id: "evt_rehearsal_large", customer: "cus_large", size: queue.MaxEventBytes + 64<<10},
	{name: "poison", id: "evt_rehearsal_poison", customer: "cus_poison", description: devstack.PoisonMarker, poison: true},
}

// deliveries signs every sample of events/samples for tenant, and the
// rehearsal's own Stripe events, for the API at baseURL.
func deliveries(root, tenantID string, inbound tenant.Inbound, baseURL string) ([]planned, error) {
	all, err := providertest.LoadSamples(filepath.Join(root, "events", "samples"))
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(all, func(s providertest.Sample) bool { return s.Provider == "stripe" })
	if i < 0 {
		return nil, fmt.Errorf("no stripe sample under events/samples")
	}
	poison := map[string]bool{}
	for _, x := range extra {
		s := all[i]
		var body map[string]any
		if err := json.Unmarshal(s.Body, &body); err != nil {
			return nil, fmt.Errorf("stripe sample: %w", err)
		}
		body["id"], body["type"] = x.id, "customer.updated"
		obj := map[string]any{"id": x.customer, "object": "customer", "description": x.description}
		if x.size > 0 {
			obj["metadata"] = map[string]any{"notes": strings.Repeat("rehearsal ", x.size/10)}
		}
		body["data"] = map[string]any{"object": obj}
		if s.Body, err = json.Marshal(body); err != nil {
			return nil, err
		}
		s.Name = "rehearsal-" + x.name
		all = append(all, s)
		poison[s.Name] = x.poison
	}
	reg := provider.Registry()
	evs, err := samples.Generate(all, samples.Options{Tenant: tenantID, Providers: inbound.Providers, Registry: reg, Now: time.Now(), BaseURL: baseURL})
	if err != nil {
		return nil, err
	}
	plan := make([]planned, 0, len(evs))
	for _, ev := range evs {
		plan = append(plan, planned{ev: ev, poison: poison[ev.Sample.Name]})
	}
	return plan, nil
}

// send posts each delivery in order (a POST that queues twice: the second
// is a sender's retry), records the answers that differ from the expected
// ones as failures, and returns the events ingest accepted, in order.
func send(ctx context.Context, rep *Report, plan []planned) ([]Delivery, []accepted) {
	var out []Delivery
	var acc []accepted
	for _, p := range plan {
		r := p.ev.Request
		tries := []string{"accepted", "duplicate"}
		if p.ev.Reply != nil {
			tries = []string{fmt.Sprintf("%d %s", p.ev.Reply.Status, p.ev.Reply.Body)}
		}
		for _, want := range tries {
			d := Delivery{Name: p.ev.Sample.Provider + "/" + p.ev.Sample.Name, Method: r.Method, Want: want}
			req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, bytes.NewReader(r.Body))
			if err != nil {
				rep.failf("%s: %v", d.Name, err)
				continue
			}
			req.Header = r.Header.Clone()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				rep.failf("%s: %v", d.Name, err)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			d.Status, d.Body = resp.StatusCode, string(b)
			var body struct {
				Events []struct {
					EventID, Status string
				}
			}
			if json.Unmarshal(b, &body) == nil {
				for _, e := range body.Events {
					if e.Status == "accepted" {
						acc = append(acc, accepted{id: e.EventID, poison: p.poison})
					}
				}
			}
			// A sender's own synchronous answer (Discord's interactions):
			// the outcome and the event ids are in headers.
			if st := resp.Header.Get("X-Hookpack-Status"); st != "" {
				d.Status, d.Body = resp.StatusCode, `{"status":"`+st+`"}`
				for _, id := range strings.Split(resp.Header.Get("X-Hookpack-Event-Ids"), ",") {
					if st == "accepted" && id != "" {
						acc = append(acc, accepted{id: id, poison: p.poison})
					}
				}
			}
			if !answered(d, p) {
				rep.failf("%s %s: answered %d %s, want %s", d.Method, d.Name, d.Status, truncate(d.Body), want)
			}
			out = append(out, d)
		}
	}
	return out, acc
}

func answered(d Delivery, p planned) bool {
	if p.ev.Reply != nil {
		return d.Status == p.ev.Reply.Status && d.Body == p.ev.Reply.Body
	}
	var body struct{ Status string }
	_ = json.Unmarshal([]byte(d.Body), &body)
	return d.Status == http.StatusOK && body.Status == d.Want
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// settle waits until the target has applied every accepted event and the
// poison event is in the DLQ, then checks: each event applied once, in the
// order accepted within its conversation; the poison event dead-lettered
// with its reason; the tenant queue empty.
func settle(ctx context.Context, o Options, client *sqs.Client, rep *Report, acc []accepted, target *devstack.Target, queueURL, dlqURL string) {
	want := map[string]bool{}
	rank := map[string]int{}
	var poison []string
	for i, a := range acc {
		rank[a.id] = i
		if a.poison {
			poison = append(poison, a.id)
			continue
		}
		want[a.id] = true
	}
	deadline := time.Now().Add(o.Settle)
	for {
		rep.Applied = target.Applied()
		done := 0
		for _, a := range rep.Applied {
			if want[a.EventID] {
				done++
			}
		}
		// The target applies an effect before the worker answers its
		// batch and the poller deletes the message: settled is also the
		// tenant queue empty.
		if done >= len(want) && depth(ctx, client, dlqURL) >= len(poison) && depth(ctx, client, queueURL) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	seen := map[string]int{}
	got := map[string][]string{}
	for _, a := range rep.Applied {
		seen[a.EventID]++
		got[a.Conversation] = append(got[a.Conversation], a.EventID)
	}
	for _, id := range sortedKeys(want) {
		if seen[id] != 1 {
			rep.failf("event %s applied %d times at the target, want once", id, seen[id])
		}
	}
	for id, n := range seen {
		if !want[id] {
			rep.failf("event %s applied %d times at the target, want never (poison or unknown)", id, n)
		}
	}
	for conv, ids := range got {
		if !slices.IsSortedFunc(ids, func(a, b string) int { return rank[a] - rank[b] }) {
			rep.failf("conversation %s applied in order %v, not in the order ingest accepted them", conv, ids)
		}
	}
	rep.DeadLetter = deadLetters(ctx, client, dlqURL)
	for _, id := range poison {
		i := slices.IndexFunc(rep.DeadLetter, func(d DeadLetter) bool { return d.EventID == id })
		switch {
		case i < 0:
			rep.failf("poison event %s is not in the DLQ %s", id, dlqURL)
		case rep.DeadLetter[i].Reason == "":
			rep.failf("poison event %s dead-lettered without its reason (%s)", id, worker.AttrReason)
		}
	}
	lim, _ := tenant.Destination{Rate: RehearsalRate, Burst: RehearsalBurst}.Limit()
	if max, bound := slices.Max(append(devstack.PerSecond(rep.Applied), 0)), int(lim.PerSecond)+lim.Burst; max > bound {
		rep.failf("destination %s took %d forwards in one second, above its rate %s + burst %d", RehearsalDestination, max, RehearsalRate, RehearsalBurst)
	}
	if len(rep.DeadLetter) != len(poison) {
		rep.failf("DLQ holds %d messages, want %d (the poison events)", len(rep.DeadLetter), len(poison))
	}
	if n := depth(ctx, client, queueURL); n != 0 {
		rep.failf("tenant queue holds %d messages after the run, want 0", n)
	}
}

func depth(ctx context.Context, client *sqs.Client, url string) int {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"}})
	if err != nil {
		return -1
	}
	n := 0
	for _, v := range out.Attributes {
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}

// deadLetters reads the DLQ's messages (made visible again at once).
func deadLetters(ctx context.Context, client *sqs.Client, url string) []DeadLetter {
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
		MessageAttributeNames: []string{"All"}, VisibilityTimeout: 0})
	if err != nil {
		return nil
	}
	var dls []DeadLetter
	for _, m := range out.Messages {
		var env struct {
			EventID string `json:"eventId"`
		}
		_ = json.Unmarshal([]byte(aws.ToString(m.Body)), &env)
		d := DeadLetter{EventID: env.EventID}
		if a, ok := m.MessageAttributes[worker.AttrReason]; ok {
			d.Reason = aws.ToString(a.StringValue)
		}
		dls = append(dls, d)
	}
	return dls
}
