package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// PausedDestination is the destination of BacklogTenant the pause
// scenario pauses; the tenant's others keep delivering.
const PausedDestination = "billing"

// pauser pauses and resumes destinations (destination.DynamoDB, as make
// pause and make resume do).
type pauser interface {
	Pause(ctx context.Context, tenantID, name, reason string, now time.Time) (destination.State, error)
	Resume(ctx context.Context, tenantID, name string) (destination.Pause, error)
}

// PauseOptions point the pause scenario at a tenant with two or more
// destinations: one is paused, Customers conversations of Stripe invoice
// events that every destination selects are sent, the others receive them
// at once, then the paused one is resumed and its backlog drains.
type PauseOptions struct {
	BaseURL, TargetURL string
	Tenant             string
	Stripe             webhook.Config
	Outbound           tenant.Outbound
	// Paused is the destination paused; States pauses and resumes it.
	Paused string
	States pauser
	// SQS reads the tenant's DLQ at DLQURL: the scenario fails on a dead
	// letter of its events.
	SQS    *sqs.Client
	DLQURL string
	// LogFile is where the worker writes its JSON lines (make run's
	// LOG_FILE): the paused destination's waits are read there, outcome
	// "paused". Empty: not shown.
	LogFile string
	// Customers and Events (per customer): default 3 and 3.
	Customers, Events int
	// SkipResume leaves the destination paused: the drain then never comes
	// and the scenario fails (its test's proof that it checks the drain).
	SkipResume bool
	// Wait bounds each wait (default 2 minutes).
	Wait time.Duration
	// Settle is how long a pause takes to reach every worker (their
	// cached destination states, at most devstack.LocalDestinationCacheTTL
	// old): the events are sent after it. Default that TTL and a second.
	Settle time.Duration
	Out    io.Writer
}

// Paused is what the pause scenario saw, times from its first send.
type Paused struct {
	Tenant, Dest string
	// Events in send order, with each destination's arrival.
	Events []PausedEvent
	// Resumed is when the destination was resumed; Waits the worker's
	// messages of Dest that waited (outcome paused) before it.
	Resumed time.Duration
	Waits   int
	// ByDest counts forwards per destination; Early the paused
	// destination's forwards before its resume, Late the others' after
	// it, Doubled the forwards of an event a destination took twice,
	// OutOfOrder the streams that arrived out of send order.
	ByDest                           map[string]int
	Early, Late, Doubled, OutOfOrder int
	Dead                             []DeadLetter
}

// PausedEvent is one event of the scenario.
type PausedEvent struct {
	Customer, Type, ID string
	Sent               time.Duration
	// At is when each destination that selects it received it.
	At map[string]time.Duration
}

// ErrPausedScenario is returned when the pause scenario saw a guarantee
// broken: a forward to the paused destination before its resume, another
// destination held back, a stream out of order, a double, a dead letter.
var ErrPausedScenario = errors.New("pause scenario")

// RunPause pauses o.Paused through o.States, sends the events, waits until
// every other destination has them and the paused one's messages wait,
// resumes it (a failure resumes it too, so the stack is left as found),
// waits for its backlog and checks what the target received.
func RunPause(ctx context.Context, o PauseOptions) (p Paused, err error) {
	if o.Customers == 0 {
		o.Customers = 3
	}
	if o.Events == 0 {
		o.Events = 3
	}
	if o.Wait == 0 {
		o.Wait = 2 * time.Minute
	}
	p = Paused{Tenant: o.Tenant, Dest: o.Paused, ByDest: map[string]int{}}
	if _, err := os.Stat(o.LogFile); o.LogFile != "" && err != nil {
		fmt.Fprintf(o.Out, "\nNo worker log at %s (LOG_FILE): the waits of the paused destination are not shown\n", o.LogFile)
		o.LogFile = ""
	}
	if err := destination.Known(o.Tenant, o.Outbound, o.Paused); err != nil {
		return p, err
	}
	if len(o.Outbound.Targets()) < 2 {
		return p, fmt.Errorf("tenant %s has one destination: the pause scenario needs another that keeps delivering", o.Tenant)
	}
	run := fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff)
	client := &http.Client{Timeout: 15 * time.Second}
	s := &Sender{BaseURL: o.BaseURL, Tenant: o.Tenant, Providers: map[string]webhook.Config{"stripe": o.Stripe},
		Registry: provider.Registry(), Client: client, Now: time.Now}

	// Invoice events, customers interleaved; every destination must select
	// each (relay's billing takes stripe:invoice.*, audit everything).
	types := []string{"invoice.created", "invoice.finalized", "invoice.paid", "invoice.updated"}
	var plan []Delivery
	for i := range o.Customers * o.Events {
		ev := PausedEvent{Customer: fmt.Sprintf("cus_%s_%d", run, i%o.Customers), Type: types[i/o.Customers%len(types)],
			ID: fmt.Sprintf("evt_%s_%02d", run, i), At: map[string]time.Duration{}}
		body := fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"data":{"object":{"id":"in_%s_%02d","customer":%q}}}`, ev.ID, ev.Type, run, i, ev.Customer)
		for _, d := range o.Outbound.Targets() {
			if d.Filter != nil && !d.Filter.Match(route.NewEvent("stripe", ev.Type, []byte(body))) {
				return p, fmt.Errorf("tenant %s's destination %s does not select %s: the pause scenario needs every destination to", o.Tenant, d.Name, ev.Type)
			}
		}
		p.Events = append(p.Events, ev)
		plan = append(plan, Delivery{Scenario: "pause", Provider: "stripe", Header: header("Content-Type", "application/json"), Body: []byte(body), Expect: 1})
	}
	var others []string
	for _, d := range o.Outbound.Targets() {
		if d.Name != o.Paused {
			others = append(others, d.Name)
		}
	}
	slices.Sort(others)

	if _, err := o.States.Pause(ctx, o.Tenant, o.Paused, "make demo: the pause scenario", time.Now()); err != nil {
		if errors.Is(err, destination.ErrAlreadyPaused) {
			return p, fmt.Errorf("%s/%s is paused already: resume it first (make resume TENANT=%s DESTINATION=%s)", o.Tenant, o.Paused, o.Tenant, o.Paused)
		}
		return p, fmt.Errorf("pause %s/%s: %w", o.Tenant, o.Paused, err)
	}
	resumed := false
	defer func() {
		if !resumed {
			if _, rerr := o.States.Resume(context.WithoutCancel(ctx), o.Tenant, o.Paused); rerr != nil {
				err = errors.Join(err, fmt.Errorf("resume %s/%s after the scenario: %w", o.Tenant, o.Paused, rerr))
			}
		}
	}()
	fmt.Fprintf(o.Out, "\nPause: %s/%s paused (package destination, as make pause); %d Stripe invoice events over %d customers, which %s and %s select\n",
		o.Tenant, o.Paused, len(plan), o.Customers, strings.Join(others, ", "), o.Paused)
	// A worker that read the destination's state just before the pause
	// trusts it for its cache's TTL: the pause reaches every worker after it.
	settle := o.Settle
	if settle <= 0 {
		settle = devstack.LocalDestinationCacheTTL + time.Second
	}
	select {
	case <-ctx.Done():
		return p, ctx.Err()
	case <-time.After(settle):
	}
	start := time.Now()
	for i, d := range plan {
		p.Events[i].Sent = time.Since(start)
		a, err := s.Send(ctx, d)
		if err == nil && a.Outcome != "accepted" {
			err = fmt.Errorf("delivery answered %d (%s)", a.Status, a.Outcome)
		}
		if err != nil {
			return p, err
		}
	}

	// Paused: the others take everything, the paused one nothing, and its
	// messages wait (one per conversation at least: each stream's head).
	want := map[string]int{}
	for _, n := range others {
		want[n] = len(plan)
	}
	read := func() ([]devstack.Applied, error) {
		all, _, err := target(ctx, client, o.TargetURL, run)
		clear(p.ByDest)
		for _, a := range all {
			p.ByDest[a.Destination]++
		}
		return all, err
	}
	waitFor := func(what string, ok func() (bool, error)) error {
		deadline := time.Now().Add(o.Wait)
		for {
			done, err := ok()
			if err != nil || done {
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: timed out after %s waiting for %s: %s", ErrPausedScenario, o.Wait, what, progress(p.ByDest, want))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	err = waitFor("the destinations not paused", func() (bool, error) {
		_, err := read()
		if n := p.ByDest[o.Paused]; err == nil && n > 0 {
			return false, fmt.Errorf("%w: %s received %d forwards while paused", ErrPausedScenario, o.Paused, n)
		}
		if err == nil && o.LogFile != "" {
			p.Waits, err = waits(o.LogFile, o.Tenant, o.Paused, run)
		}
		return done(p.ByDest, want) && (o.LogFile == "" || p.Waits >= o.Customers), err
	})
	if err != nil {
		return p, err
	}
	if !o.SkipResume {
		if _, err := o.States.Resume(ctx, o.Tenant, o.Paused); err != nil {
			return p, fmt.Errorf("resume %s/%s: %w", o.Tenant, o.Paused, err)
		}
		resumed = true
	}
	p.Resumed = time.Since(start)
	fmt.Fprintf(o.Out, "  %s resumed at %.1f s (package destination, as make resume)\n", o.Paused, p.Resumed.Seconds())

	want[o.Paused] = len(plan)
	var applied []devstack.Applied
	if err := waitFor("the resumed destination's backlog", func() (bool, error) {
		var err error
		applied, err = read()
		return done(p.ByDest, want), err
	}); err != nil {
		return p, err
	}
	if p.Dead, err = deadLetters(ctx, replay.New(o.SQS, nil, replay.Options{Visibility: 10 * time.Second}), o.DLQURL, run); err != nil {
		return p, err
	}
	p.measure(applied, start)
	if p.Early+p.Late+p.Doubled+p.OutOfOrder+len(p.Dead) > 0 {
		return p, fmt.Errorf("%w: %d forwards to %s while paused, %d to the others after its resume, %d doubled, %d streams out of order, %d dead letters",
			ErrPausedScenario, p.Early, o.Paused, p.Late, p.Doubled, p.OutOfOrder, len(p.Dead))
	}
	return p, nil
}

// measure fills each event's arrivals and the checks from the target's
// record of this run, in arrival order.
func (p *Paused) measure(applied []devstack.Applied, start time.Time) {
	index := map[string]int{}
	for i, e := range p.Events {
		index[e.ID] = i
	}
	streams := map[string][]string{} // destination + conversation → event ids in arrival order
	for _, a := range applied {
		i, ok := index[a.EventID]
		if !ok {
			continue
		}
		at := a.At.Sub(start)
		if _, twice := p.Events[i].At[a.Destination]; twice {
			p.Doubled++
		}
		p.Events[i].At[a.Destination] = at
		switch {
		case a.Destination == p.Dest && at < p.Resumed:
			p.Early++
		case a.Destination != p.Dest && at > p.Resumed:
			p.Late++
		}
		k := a.Destination + " " + a.Conversation
		streams[k] = append(streams[k], a.EventID)
	}
	for _, ids := range streams {
		if !slices.IsSorted(ids) {
			p.OutOfOrder++
		}
	}
}

// waits counts the worker's lines of this run's messages for tenant's
// destination dest that waited because it was paused.
func waits(logFile, tenantID, dest, run string) (int, error) {
	f, err := os.Open(logFile)
	if err != nil {
		return 0, fmt.Errorf("the worker's log: %w", err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), run) {
			continue
		}
		var l struct{ Outcome, TenantID, EventID, Stream string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Outcome == "paused" && l.TenantID == tenantID &&
			strings.Contains(l.EventID, run) && strings.Contains(l.Stream, "forward:"+dest) {
			n++
		}
	}
	return n, sc.Err()
}

// Print writes each event's arrivals, then the verdict.
func (p Paused) Print(w io.Writer) {
	if len(p.Events) == 0 {
		return
	}
	names := slices.Sorted(maps.Keys(p.ByDest))
	fmt.Fprintf(w, "\nA paused destination waits, the others never stop (tenant %s; seconds from the first send)\n", p.Tenant)
	fmt.Fprintf(w, "  %-28s %-18s %6s", "customer", "event", "sent")
	for _, n := range names {
		fmt.Fprintf(w, " %9s", n)
	}
	fmt.Fprintln(w)
	for _, e := range p.Events {
		fmt.Fprintf(w, "  %-28s %-18s %6.1f", e.Customer, e.Type, e.Sent.Seconds())
		for _, n := range names {
			if at, ok := e.At[n]; ok {
				fmt.Fprintf(w, " %9.1f", at.Seconds())
			} else {
				fmt.Fprintf(w, " %9s", "-")
			}
		}
		fmt.Fprintln(w)
	}
	if p.Waits > 0 {
		fmt.Fprintf(w, "  while paused: %s received nothing; its messages waited %d times (worker outcome \"paused\", no attempt counted)\n", p.Dest, p.Waits)
	}
	fmt.Fprintf(w, "  resumed at %.1f s: %s's backlog drained, each customer in order\n", p.Resumed.Seconds(), p.Dest)
	fmt.Fprintf(w, "  %d forwards to %s while paused, %d to the others after its resume, %d doubled, %d streams out of order, %d dead letters\n",
		p.Early, p.Dest, p.Late, p.Doubled, p.OutOfOrder, len(p.Dead))
}
