package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/route"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// The backlog scenario's tenant and rated destination in
// events/tenants.json.
const (
	BacklogTenant      = "relay"
	BacklogDestination = "billing"
	// DefaultBacklogEvents and DefaultBacklogCustomers are the backlog's
	// size and its conversations.
	DefaultBacklogEvents    = 30
	DefaultBacklogCustomers = 5
)

// BacklogOptions point the backlog scenario at a tenant with a rated
// destination: Events Stripe events over Customers conversations are sent
// at once, faster than the destination's rate, and the target's record
// shows the backlog drain at that rate, each conversation in order.
type BacklogOptions struct {
	BaseURL, TargetURL string
	// Tenant is the tenant (events/tenants.json: relay); it has a stripe
	// sender and Outbound, whose Rated destination takes a rate.
	Tenant   string
	Stripe   webhook.Config
	Outbound tenant.Outbound
	Rated    string
	// Events and Customers: DefaultBacklogEvents and
	// DefaultBacklogCustomers. One event in five is a
	// customer.updated, which the rated destination's filter
	// (stripe:invoice.*) leaves out.
	Events, Customers int
	// Wait bounds the wait for the drain (default 2 minutes).
	Wait time.Duration
	Out  io.Writer
}

// Backlog is what the backlog scenario saw at the target.
type Backlog struct {
	Tenant, Rated string
	Limit         tenant.Limit
	Sent          int
	SendTook      time.Duration
	// PerSecond is how many forwards the rated destination received in each
	// second from its first; Drain is its first to its last.
	PerSecond []int
	Drain     time.Duration
	// ByDest counts this run's applied forwards per destination.
	ByDest map[string]int
	// Excluded counts forwards at Rated of events its filter leaves out;
	// OutOfOrder the conversations whose forwards arrived at a destination
	// out of their send order.
	Excluded, OutOfOrder int
}

// Max is the most forwards the rated destination took in one second.
func (b Backlog) Max() int {
	if len(b.PerSecond) == 0 {
		return 0
	}
	return slices.Max(b.PerSecond)
}

// Bound is the most the rate allows in one second: the rate plus the burst.
func (b Backlog) Bound() int { return int(b.Limit.PerSecond) + b.Limit.Burst }

// ErrTooFast is returned when the rated destination took more in a second
// than its rate and burst allow.
var ErrTooFast = errors.New("the rated destination received more than its rate allows")

// RunBacklog sends the backlog and waits until every destination has what
// its filter selects, then checks the rate, the filters and the order.
func RunBacklog(ctx context.Context, o BacklogOptions) (Backlog, error) {
	if o.Events == 0 {
		o.Events = DefaultBacklogEvents
	}
	if o.Customers == 0 {
		o.Customers = DefaultBacklogCustomers
	}
	if o.Wait == 0 {
		o.Wait = 2 * time.Minute
	}
	b := Backlog{Tenant: o.Tenant, Rated: o.Rated, ByDest: map[string]int{}}
	var rated *tenant.Destination
	for _, d := range o.Outbound.Targets() {
		if d.Name == o.Rated {
			rated = &d
		}
	}
	if rated == nil {
		return b, fmt.Errorf("tenant %s has no destination %q", o.Tenant, o.Rated)
	}
	lim, err := rated.Limit()
	if err != nil || lim.PerSecond == 0 {
		return b, fmt.Errorf("tenant %s's destination %s takes no rate (%v)", o.Tenant, o.Rated, err)
	}
	b.Limit = lim
	run := fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff)
	client := &http.Client{Timeout: 15 * time.Second}
	s := &Sender{BaseURL: o.BaseURL, Tenant: o.Tenant, Providers: map[string]webhook.Config{"stripe": o.Stripe},
		Registry: provider.Registry(), Client: client, Now: time.Now}

	// Each customer's events in its order; the customers at once.
	types := []string{"invoice.created", "invoice.finalized", "invoice.paid", "invoice.updated", "customer.updated"}
	want := map[string]int{} // destination → forwards owed
	var plan [][]Delivery
	for c := range o.Customers {
		var ds []Delivery
		cus := fmt.Sprintf("cus_%s_%d", run, c)
		for i := c; i < o.Events; i += o.Customers {
			typ := types[i/o.Customers%len(types)]
			id := fmt.Sprintf("evt_%s_%02d", run, i)
			body := fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"data":{"object":{"id":"in_%s_%02d","customer":%q}}}`, id, typ, run, i, cus)
			ds = append(ds, Delivery{Scenario: "backlog", Provider: "stripe", Header: header("Content-Type", "application/json"), Body: []byte(body), Expect: 1})
			for _, d := range o.Outbound.Targets() {
				if d.Filter == nil || d.Filter.Match(route.NewEvent("stripe", typ, []byte(body))) {
					want[d.Name]++
				}
			}
		}
		plan = append(plan, ds)
	}
	fmt.Fprintf(o.Out, "\nBacklog: %d Stripe events for tenant %s over %d customers, sent at once; %s takes %s (burst %d)\n",
		o.Events, o.Tenant, o.Customers, o.Rated, rated.Rate, lim.Burst)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(plan))
	for c, ds := range plan {
		wg.Go(func() {
			for _, d := range ds {
				a, err := s.Send(ctx, d)
				if err == nil && a.Outcome != "accepted" {
					err = fmt.Errorf("delivery answered %d (%s)", a.Status, a.Outcome)
				}
				if err != nil {
					errs[c] = err
					return
				}
			}
		})
	}
	wg.Wait()
	b.SendTook = time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return b, err
	}
	b.Sent = o.Events

	deadline := time.Now().Add(o.Wait)
	var mine []devstack.Applied
	for {
		all, _, err := target(ctx, client, o.TargetURL, run)
		if err != nil {
			return b, err
		}
		mine = all[:0:0]
		clear(b.ByDest)
		for _, a := range all {
			if a.Tenant == o.Tenant {
				mine = append(mine, a)
				b.ByDest[a.Destination]++
			}
		}
		fmt.Fprintf(o.Out, "\r  drained: %s", progress(b.ByDest, want))
		if done(b.ByDest, want) {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(o.Out)
			return b, fmt.Errorf("backlog: timed out after %s: %s", o.Wait, progress(b.ByDest, want))
		}
		select {
		case <-ctx.Done():
			return b, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	fmt.Fprintln(o.Out, " ✓")
	b.measure(mine, rated)
	if b.Excluded > 0 || b.OutOfOrder > 0 {
		return b, fmt.Errorf("backlog: %d forwards at %s its filter excludes, %d conversations out of order", b.Excluded, o.Rated, b.OutOfOrder)
	}
	if b.Max() > b.Bound() {
		return b, fmt.Errorf("%w: %d in one second, above %s + burst %d", ErrTooFast, b.Max(), rated.Rate, lim.Burst)
	}
	return b, nil
}

// measure fills the per-second counts, the drain time, the filter and the
// order checks from the target's record.
func (b *Backlog) measure(applied []devstack.Applied, rated *tenant.Destination) {
	// Event ids end in their send index, zero-padded: a conversation's
	// forwards are in order at a destination when their ids ascend.
	got := map[string][]string{} // destination + conversation → event ids in arrival order
	var at []devstack.Applied    // the rated destination's, in arrival order
	for _, a := range applied {
		k := a.Destination + " " + a.Conversation
		got[k] = append(got[k], a.EventID)
		if a.Destination != b.Rated {
			continue
		}
		if rated.Filter != nil && !rated.Filter.Match(route.NewEvent("stripe", a.Type, nil)) {
			b.Excluded++
		}
		at = append(at, a)
	}
	b.PerSecond = devstack.PerSecond(at)
	if len(at) > 0 {
		b.Drain = at[len(at)-1].At.Sub(at[0].At)
	}
	for _, ids := range got {
		if !slices.IsSorted(ids) {
			b.OutOfOrder++
		}
	}
}

func done(got, want map[string]int) bool {
	for d, n := range want {
		if got[d] < n {
			return false
		}
	}
	return true
}

func progress(got, want map[string]int) string {
	var parts []string
	for _, d := range slices.Sorted(maps.Keys(want)) {
		parts = append(parts, fmt.Sprintf("%s %d/%d", d, got[d], want[d]))
	}
	return strings.Join(parts, ", ")
}

// Print writes the drain: a bar per second at the rated destination.
func (b Backlog) Print(w io.Writer) {
	if b.Sent == 0 {
		return
	}
	fmt.Fprintf(w, "\nBacklog drained at %s's rate (tenant %s: %d events queued in %.1f s)\n", b.Rated, b.Tenant, b.Sent, b.SendTook.Seconds())
	fmt.Fprintf(w, "  second  forwards to %s\n", b.Rated)
	for i, n := range b.PerSecond {
		fmt.Fprintf(w, "  %6d  %-*s %d\n", i, b.Bound()+1, strings.Repeat("█", n), n)
	}
	fmt.Fprintf(w, "  %s: %d forwards in %.1f s, at most %d in a second (rate %g/s + burst %d = %d)\n",
		b.Rated, b.ByDest[b.Rated], b.Drain.Seconds(), b.Max(), b.Limit.PerSecond, b.Limit.Burst, b.Bound())
	for _, d := range slices.Sorted(maps.Keys(b.ByDest)) {
		if d != b.Rated {
			fmt.Fprintf(w, "  %s: %d forwards, no rate\n", d, b.ByDest[d])
		}
	}
	fmt.Fprintf(w, "  %d forwards where a filter excludes them, %d conversations out of order\n", b.Excluded, b.OutOfOrder)
}
