// Package demo is `make demo`: it sends signed deliveries from several
// providers to a running local stack — duplicates, a burst of identical
// concurrent deliveries, interleaved conversations, a batched WhatsApp POST,
// out-of-order status updates, a flaky target and a poison event — then
// prints what the system actually did, read back from the target service
// (effects applied, per conversation, in order) and the dead-letter queue
// (what was dead-lettered and why), next to what the sender was answered.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Delivery is one HTTP delivery a provider would make.
type Delivery struct {
	Scenario string
	Provider string
	Header   http.Header
	Body     []byte
	// Key names the logical delivery: repeats share it.
	Key string
	// Expect is how many effects the first accepted delivery of Key should
	// eventually cause (0 for poison).
	Expect int
}

// Answer is what the stack answered one delivery.
type Answer struct {
	Delivery
	Status  int
	Outcome string // accepted | duplicate | rejected | error
}

// Sender signs and posts deliveries for one tenant.
type Sender struct {
	BaseURL   string
	Tenant    string
	Providers map[string]webhook.Config
	Registry  webhook.Registry
	Client    *http.Client
	Now       func() time.Time
}

// Send signs d with the tenant's first secret for its provider and posts it.
func (s *Sender) Send(ctx context.Context, d Delivery) (Answer, error) {
	p, ok := s.Registry.Lookup(d.Provider)
	if !ok {
		return Answer{}, fmt.Errorf("unknown provider %s", d.Provider)
	}
	signer, ok := p.(webhook.Signer)
	if !ok {
		return Answer{}, fmt.Errorf("provider %s cannot sign", d.Provider)
	}
	u := s.BaseURL + "/webhooks/" + s.Tenant + "/" + d.Provider
	req := &webhook.Request{Method: http.MethodPost, Tenant: s.Tenant, Provider: d.Provider, Header: d.Header.Clone(), Query: url.Values{}, Body: d.Body, URL: u}
	if err := signer.Sign(req, s.Providers[d.Provider], s.Now()); err != nil {
		return Answer{}, fmt.Errorf("sign %s delivery: %w", d.Provider, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return Answer{}, err
	}
	hr.Header = req.Header
	resp, err := s.Client.Do(hr)
	if err != nil {
		return Answer{}, fmt.Errorf("post to %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := Answer{Delivery: d, Status: resp.StatusCode}
	var parsed struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(b, &parsed)
	switch {
	case resp.StatusCode == http.StatusOK && parsed.Status != "":
		a.Outcome = parsed.Status
	case resp.StatusCode >= 500:
		a.Outcome = "error"
	default:
		a.Outcome = "rejected"
	}
	return a, nil
}

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// Plan returns the demo's deliveries in sending order; run is a unique
// suffix so that every demo run is new to the dedup window.
func Plan(run string) (sequential []Delivery, burst Delivery) {
	jsonCT := "application/json"
	stripe := func(id, typ, cus string) Delivery {
		body := fmt.Sprintf(`{"id":"evt_%s_%s","object":"event","type":%q,"data":{"object":{"id":"in_%s_%s","customer":"cus_%s_%s"}}}`, id, run, typ, id, run, cus, run)
		return Delivery{Scenario: "stripe: one customer, in order, each delivered twice", Provider: "stripe", Header: header("Content-Type", jsonCT), Body: []byte(body), Expect: 1}
	}
	shop := func(n int, order string, topic string) Delivery {
		// Each topic carries the order as it is then (Shopify keys nothing
		// on its unsigned headers: the key is the signed body's hash).
		body := fmt.Sprintf(`{"id":%s,"name":"#%s","financial_status":"paid","updated_at":"2026-11-22T12:00:0%dZ"}`, order, order, n)
		return Delivery{Scenario: "shopify: two orders interleaved", Provider: "shopify",
			Header: header("Content-Type", jsonCT, "X-Shopify-Topic", topic, "X-Shopify-Shop-Domain", "demo.myshopify.com",
				"X-Shopify-Event-Id", fmt.Sprintf("evt-%s-%d", run, n), "X-Shopify-Webhook-Id", fmt.Sprintf("wh-%s-%d", run, n)),
			Body: []byte(body), Expect: 1}
	}
	twilio := func(status string) Delivery {
		form := url.Values{"MessageSid": {"SM" + run}, "MessageStatus": {status}, "From": {"+15005550006"}, "To": {"+15005550001"}, "AccountSid": {"ACdemo"}}
		return Delivery{Scenario: "twilio: status callbacks out of order", Provider: "twilio",
			Header: header("Content-Type", "application/x-www-form-urlencoded"), Body: []byte(form.Encode()), Expect: 1}
	}
	whatsapp := Delivery{Scenario: "whatsapp: one POST, two customers, split and ordered", Provider: "whatsapp", Header: header("Content-Type", jsonCT), Expect: 3,
		Body: []byte(fmt.Sprintf(`{"object":"whatsapp_business_account","entry":[{"id":"WABA1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550000000","phone_number_id":"PN1"},"contacts":[{"profile":{"name":"Ana"},"wa_id":"15551110001"},{"profile":{"name":"Bo"},"wa_id":"15551110002"}],"messages":[{"from":"15551110001","id":"wamid.A1%s","timestamp":"1795000000","type":"text","text":{"body":"Ol\u00e1!"}},{"from":"15551110002","id":"wamid.B1%s","timestamp":"1795000001","type":"text","text":{"body":"hi"}},{"from":"15551110001","id":"wamid.A2%s","timestamp":"1795000002","type":"text","text":{"body":"order 42?"}}]}}]}]}`, run, run, run))}
	paddle := func(id, marker string, expect int, scenario string) Delivery {
		body := fmt.Sprintf(`{"event_id":"evt_%s_%s","event_type":"transaction.paid","data":{"id":"txn_%s_%s","customer_id":"ctm_%s","note":%q}}`, id, run, id, run, run, marker)
		return Delivery{Scenario: scenario, Provider: "hmac", Header: header("Content-Type", jsonCT), Body: []byte(body), Expect: expect}
	}
	a1, a2, a3 := stripe("a1", "customer.created", "a"), stripe("a2", "invoice.created", "a"), stripe("a3", "invoice.paid", "a")
	sequential = []Delivery{
		a1, a1, a2, a2, a3, a3, // each delivered twice
		shop(1, "1001", "orders/create"), shop(2, "2002", "orders/create"), shop(3, "1001", "orders/paid"), shop(4, "2002", "orders/paid"), shop(5, "1001", "orders/fulfilled"),
		whatsapp, whatsapp,
		twilio("delivered"), twilio("sent"), twilio("queued"),
		paddle("flaky", devstack.FlakyMarker, 1, "paddle (generic hmac): target fails once (503), retried"),
		paddle("poison", devstack.PoisonMarker, 0, "paddle (generic hmac): poison event (target answers 422)"),
	}
	burst = Delivery{Scenario: "github: 20 identical deliveries at once", Provider: "github", Expect: 1,
		Header: header("Content-Type", jsonCT, "X-GitHub-Event", "issues", "X-GitHub-Delivery", "burst-"+run),
		Body:   []byte(`{"action":"opened","issue":{"number":7},"repository":{"full_name":"octo/demo"}}`)}
	for i := range sequential {
		sequential[i].Key = sequential[i].Provider + ":" + string(sequential[i].Body) + fmt.Sprint(sequential[i].Header)
	}
	burst.Key = "burst"
	return sequential, burst
}

// SendAll runs the plan: sequential deliveries in order, then the burst of n
// concurrent identical deliveries. progress is called after each answer.
func (s *Sender) SendAll(ctx context.Context, sequential []Delivery, burst Delivery, n int, progress func(Answer)) ([]Answer, error) {
	var answers []Answer
	for _, d := range sequential {
		a, err := s.Send(ctx, d)
		if err != nil {
			return answers, err
		}
		answers = append(answers, a)
		progress(a)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			a, err := s.Send(ctx, burst)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = err
				return
			}
			answers = append(answers, a)
			progress(a)
		})
	}
	close(start)
	wg.Wait()
	return answers, firstErr
}

// Expected is the number of effects the answers should eventually cause:
// Expect once per logical delivery that was accepted at least once.
func Expected(answers []Answer) int {
	n := 0
	seen := map[string]bool{}
	for _, a := range answers {
		if a.Outcome == "accepted" && !seen[a.Key] {
			seen[a.Key] = true
			n += a.Expect
		}
	}
	return n
}

// Report summarises answers, the target's applied effects and the DLQ: this
// run's only (Stats.Applied counts Applied; the target's other counters
// are what they grew by during the run).
type Report struct {
	Answers []Answer
	Applied []devstack.Applied
	Stats   devstack.Stats
	Dead    []DeadLetter
}

// DeadLetter is one message found on the tenant's DLQ.
type DeadLetter struct {
	EventID, Reason, Attempts string
}

// Print writes the summary tables.
func (r Report) Print(w io.Writer) {
	type row struct{ sent, accepted, duplicate, rejected int }
	byScenario := map[string]*row{}
	var order []string
	for _, a := range r.Answers {
		rw, ok := byScenario[a.Scenario]
		if !ok {
			rw = &row{}
			byScenario[a.Scenario] = rw
			order = append(order, a.Scenario)
		}
		rw.sent++
		switch a.Outcome {
		case "accepted":
			rw.accepted++
		case "duplicate":
			rw.duplicate++
		default:
			rw.rejected++
		}
	}
	fmt.Fprintf(w, "\nWhat the senders were answered\n")
	fmt.Fprintf(w, "  %-58s %5s %9s %10s %9s\n", "scenario", "sent", "accepted", "duplicate", "rejected")
	var tot row
	for _, s := range order {
		rw := byScenario[s]
		fmt.Fprintf(w, "  %-58s %5d %9d %10d %9d\n", s, rw.sent, rw.accepted, rw.duplicate, rw.rejected)
		tot.sent += rw.sent
		tot.accepted += rw.accepted
		tot.duplicate += rw.duplicate
		tot.rejected += rw.rejected
	}
	fmt.Fprintf(w, "  %-58s %5d %9d %10d %9d\n", "total", tot.sent, tot.accepted, tot.duplicate, tot.rejected)

	fmt.Fprintf(w, "\nEffects the target applied, per conversation, in order (from the target service)\n")
	byConv := map[string][]devstack.Applied{}
	var convs []string
	for _, a := range r.Applied {
		k := a.Provider + " " + a.Conversation
		if _, ok := byConv[k]; !ok {
			convs = append(convs, k)
		}
		byConv[k] = append(byConv[k], a)
	}
	sort.Strings(convs)
	for _, c := range convs {
		var steps []string
		for _, a := range byConv[c] {
			steps = append(steps, a.Type)
		}
		fmt.Fprintf(w, "  %-52s %d: %s\n", c, len(byConv[c]), strings.Join(steps, " → "))
	}
	fmt.Fprintf(w, "  applied %d effects of this run; meanwhile the target ignored %d repeated Idempotency-Keys and refused %d poison deliveries\n",
		r.Stats.Applied, r.Stats.Duplicates, r.Stats.Refused)

	fmt.Fprintf(w, "\nDead-lettered (from the tenant's DLQ)\n")
	if len(r.Dead) == 0 {
		fmt.Fprintf(w, "  none\n")
	}
	for _, d := range r.Dead {
		fmt.Fprintf(w, "  %s after %s attempt(s): %s\n", d.EventID, d.Attempts, d.Reason)
	}
}
