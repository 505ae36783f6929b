package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// event is one webhook the providers send, with its conversation's
// sequence number.
type event struct {
	tenant, conv string
	seq          int
	id           string
	poison       bool
	large        bool // a body over SQS's 1 MiB: it travels through S3
	custom       bool // applied by customEffects, not forwarded
	typ          string

	mu       sync.Mutex
	accepted bool // some delivery got a 2xx
	// acceptedAt is when the first 2xx came: where a delivery's latency
	// starts.
	acceptedAt time.Time
}

// delivery is one send of an event, retried until it gets a 2xx.
type delivery struct {
	ev *event
	// concurrent duplicates go out with the event's first delivery; the
	// others some time after it was accepted.
	concurrent bool
	delay      time.Duration
}

// workload is what the providers send: conversations of events in
// sequence order, and the duplicate deliveries among them.
type workload struct {
	convs [][]*event
	dups  map[*event][]delivery
	all   map[string]*event // tenant/event id → event
}

// provider is the sender every tenant enables: the generic HMAC provider,
// with the event id, type and conversation read from the JSON body.
const providerName = "hmac"

// tenants are the run's tenants and how their senders sign. alpha and
// beta forward every event; the others are described by their constants.
var tenants = map[string]map[string]string{
	"alpha": {
		"header": "Paddle-Signature", "separator": ";", "param": "h1", "timestamp_param": "ts",
		"signed": "{timestamp}:{body}", "tolerance": "300s",
		"id": "json:event_id", "type": "json:event_type", "conversation": "json:data.customer_id",
	},
	"beta":        chaosSigned,
	destTenant:    chaosSigned,
	customTenant:  chaosSigned,
	redriveTenant: chaosSigned,
	outageTenant:  chaosSigned,
}

var chaosSigned = map[string]string{
	"header": "X-Chaos-Signature", "prefix": "sha256=",
	"id": "json:event_id", "type": "json:event_type", "conversation": "json:data.customer_id",
}

const (
	// customTenant's events are applied by custom ev.Once effects
	// (customEffects), in conversations like the forward tenants'.
	customTenant = "gamma"
	// redriveTenant's queue has a small maxReceiveCount (redriveReceives)
	// so that SQS's own redrive fires within the run: the effects of some
	// of its events crash until SQS moves them to the DLQ, and the run
	// redrives its DLQ with StartMessageMoveTask. Its events are half custom,
	// half forwarded, each its own conversation (a redriven message goes to
	// the back of its group), and none poison (the move task would bring a
	// worker's dead letter back too).
	redriveTenant = "delta"
	// outageTenant's target is down for the run's first outagePeriod,
	// longer than its worker's retry horizon (outageRetention less
	// outageMargin): each of its events must be applied or dead-lettered
	// with a reason, none left to expire.
	outageTenant = "epsilon"
)

// largeShare is the share of events whose body is over SQS's 1 MiB (the
// payload bucket's path), decided per event id so that the other choices
// of a seed do not move.
const largeShare = 0.01

// largePad makes a body about 1.1 MB: over MaxEventBytes, so it is offloaded.
var largePad = strings.Repeat("chaos ", 190_000)

// newWorkload builds deliveries events from the seed: conversations spread
// over the tenants, a share dupShare of the deliveries duplicates of earlier
// events, a share poison of the events refused by the target (never the
// first or last of a conversation: poison sits in busy conversations).
func newWorkload(seed uint64, deliveries, conversations int, dupShare, poison float64) *workload {
	rng := rand.New(rand.NewPCG(seed, 0x6368616f73))
	ids := []string{"alpha", "beta", customTenant, redriveTenant, outageTenant, destTenant}
	unique := int(float64(deliveries) * (1 - dupShare))
	w := &workload{convs: make([][]*event, conversations), dups: map[*event][]delivery{}, all: map[string]*event{}}
	var flat []*event
	for i := range unique {
		c := i % conversations
		t := ids[c%len(ids)]
		ev := &event{tenant: t, conv: fmt.Sprintf("conv-%03d", c), seq: len(w.convs[c])}
		ev.id = fmt.Sprintf("evt-%s-%03d-%05d", t, c, ev.seq)
		ev.large = unit(seed, "large|"+t+"/"+ev.id, 0) < largeShare
		ev.custom = t == customTenant || t == redriveTenant && unit(seed, "custom|"+ev.id, 0) < 0.5
		ev.typ = "chaos.step"
		switch {
		case ev.custom:
			ev.typ = customType
		case t == destTenant:
			ev.typ = destTypes[ev.seq%len(destTypes)]
		}
		w.convs[c] = append(w.convs[c], ev)
		w.all[t+"/"+ev.id] = ev
		flat = append(flat, ev)
	}
	var convs [][]*event
	for _, conv := range w.convs {
		if len(conv) == 0 || conv[0].tenant != redriveTenant {
			convs = append(convs, conv)
			continue
		}
		for _, ev := range conv {
			ev.conv = fmt.Sprintf("%s-%05d", ev.conv, ev.seq)
			convs = append(convs, []*event{ev})
		}
	}
	w.convs = convs
	largePoison := false
	for _, conv := range w.convs {
		for i, ev := range conv {
			ev.poison = i > 0 && i < len(conv)-1 && rng.Float64() < poison
			if ev.poison && !largePoison {
				// One poison event always travels through S3: its dead
				// letter is a pointer the DLQ's readers must resolve.
				ev.large, largePoison = true, true
			}
		}
	}
	for range deliveries - unique {
		ev := flat[rng.IntN(len(flat))]
		w.dups[ev] = append(w.dups[ev], delivery{ev: ev, concurrent: rng.IntN(2) == 0, delay: time.Duration(rng.IntN(3000)) * time.Millisecond})
	}
	return w
}

// body is the JSON document the providers send for ev.
func (ev *event) body() string {
	pad := ""
	if ev.large {
		pad = `,"pad":"` + largePad + `"`
	}
	return fmt.Sprintf(`{"event_id":%q,"event_type":%q,"data":{"customer_id":%q,"seq":%d}%s}`, ev.id, ev.typ, ev.conv, ev.seq, pad)
}

// acceptance reports whether ev was accepted, and when first.
func (ev *event) acceptance() (bool, time.Time) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.accepted, ev.acceptedAt
}

func (w *workload) isPoison(tenantID, eventID string) bool {
	ev, ok := w.all[tenantID+"/"+eventID]
	return ok && ev.poison
}

// sender plays the providers: per conversation, each event is sent once it
// can be (the previous one accepted, and the gate admits it), re-sent on any non-2xx answer or
// connection error the way providers retry, honouring Retry-After.
type sender struct {
	url      string
	client   *http.Client
	file     *tenant.File
	signer   webhook.Signer
	dice     *dice
	deadline time.Duration
	// slots bounds the requests in flight (the providers' concurrency).
	slots chan struct{}
	// gate, when set, holds each conversation's next event while its
	// tenant's queue is backlogged (see gate), but destTenant's: those are
	// paced by destSendRate and phases.sendSpan.
	gate   *gate
	phases phases

	mu       sync.Mutex
	attempts int
	answers  map[string]int // "200", "409", "connection error", …
}

func newSender(url string, file *tenant.File, d *dice, deadline time.Duration, concurrency int) (*sender, error) {
	p, ok := provider.Registry().Lookup(providerName)
	if !ok {
		return nil, fmt.Errorf("provider %s is not registered", providerName)
	}
	signer, ok := p.(webhook.Signer)
	if !ok {
		return nil, fmt.Errorf("provider %s cannot sign", providerName)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	return &sender{
		url: url, file: file, signer: signer, dice: d, deadline: deadline, slots: make(chan struct{}, concurrency),
		client:  &http.Client{Transport: tr, Timeout: 30 * time.Second},
		answers: map[string]int{},
	}, nil
}

// run sends the workload and returns when every delivery got a 2xx or gave
// up at the deadline.
func (s *sender) run(ctx context.Context, w *workload) {
	var wg sync.WaitGroup
	paced := 0 // destTenant's conversations
	for _, conv := range w.convs {
		if len(conv) > 0 && conv[0].tenant == destTenant {
			paced++
		}
	}
	for _, conv := range w.convs {
		wg.Go(func() {
			var gap time.Duration
			if len(conv) > 0 && conv[0].tenant == destTenant {
				gap = max(s.phases.sendSpan/time.Duration(len(conv)), time.Duration(float64(paced)/destSendRate*float64(time.Second)))
			}
			for i, ev := range conv {
				switch {
				case gap > 0: // destTenant: paced, not gated
					if i > 0 {
						sleep(ctx, gap)
					}
				case s.gate != nil:
					s.gate.wait(ev.tenant)
				}
				for _, d := range w.dups[ev] {
					if d.concurrent {
						wg.Go(func() { s.deliver(ctx, d.ev) })
					}
				}
				s.deliver(ctx, ev)
				for _, d := range w.dups[ev] {
					if !d.concurrent {
						wg.Go(func() {
							sleep(ctx, d.delay)
							s.deliver(ctx, d.ev)
						})
					}
				}
			}
		})
	}
	wg.Wait()
}

// deliver sends ev until it gets a 2xx, and reports whether it did.
func (s *sender) deliver(ctx context.Context, ev *event) bool {
	start := time.Now()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil && time.Since(start) < s.deadline {
		status, retryAfter, err := s.post(ctx, ev)
		if err == nil && status/100 == 2 {
			ev.mu.Lock()
			if !ev.accepted {
				ev.accepted, ev.acceptedAt = true, time.Now()
			}
			ev.mu.Unlock()
			return true
		}
		wait := backoff/2 + time.Duration(s.dice.roll("sender|"+ev.id)*float64(backoff/2))
		if retryAfter > 0 {
			wait = min(retryAfter, 3*time.Second)
		}
		backoff = min(2*backoff, 2*time.Second)
		sleep(ctx, wait)
	}
	return false
}

// post sends one signed delivery of ev.
func (s *sender) post(ctx context.Context, ev *event) (int, time.Duration, error) {
	body := ev.body()
	url := s.url + "/webhooks/" + ev.tenant + "/" + providerName
	cfg, _ := s.file.Tenants[ev.tenant].Provider(providerName)
	wreq := &webhook.Request{
		Method: http.MethodPost, Tenant: ev.tenant, Provider: providerName, URL: url,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body),
	}
	if err := s.signer.Sign(wreq, cfg, time.Now()); err != nil {
		return 0, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header = wreq.Header
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	resp, err := s.client.Do(req)
	<-s.slots
	s.mu.Lock()
	s.attempts++
	if err != nil {
		s.answers["connection error"]++
	} else {
		s.answers[fmt.Sprint(resp.StatusCode)]++
	}
	s.mu.Unlock()
	if err != nil {
		return 0, 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var ra time.Duration
	if n, err := time.ParseDuration(resp.Header.Get("Retry-After") + "s"); err == nil {
		ra = n
	}
	return resp.StatusCode, ra, nil
}
