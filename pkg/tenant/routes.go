package tenant

import (
	"fmt"

	"github.com/hookpack/hookpack/pkg/route"
)

// Stream is one of a tenant's destinations as the ingest sees it: its name
// and filter, no URL, secret or rate. The ingest queues each event its
// filter selects on a message group of its own (docs/architecture.md,
// "Streams").
type Stream struct {
	Name   string        `json:"name"`
	Filter *route.Filter `json:"filter,omitempty"`
}

// Routes is a tenant's routing parameter, "<prefix>/tenants/<id>/routes":
// the destinations' names and filters, written beside the outbound
// parameter (SSM.Put, tenant.sh) so that the ingest, which may not read
// outbound secrets, knows the tenant's streams. A tenant without it (or
// with fewer than two streams) gets one message per event, as with a
// targetUrl.
type Routes struct {
	Streams []Stream `json:"streams"`
}

// Routes returns o's routing: one stream per named destination, in
// configuration order; none for a targetUrl.
func (o Outbound) Routes() Routes {
	r := Routes{Streams: []Stream{}}
	if o.TargetURL != "" {
		return r
	}
	for _, d := range o.Destinations {
		r.Streams = append(r.Streams, Stream{Name: d.Name, Filter: d.Filter})
	}
	return r
}

// Validate checks the routes of tenant id: names as a destination's
// (CheckName), unique. It returns an error wrapping ErrInvalid.
func (r Routes) Validate(id string) error {
	seen := map[string]bool{}
	for i, s := range r.Streams {
		if err := CheckName(s.Name); err != nil || seen[s.Name] {
			return invalid(id, fmt.Sprintf("routes.streams[%d].name", i), "not a unique destination name")
		}
		seen[s.Name] = true
	}
	return nil
}

// Select returns the names of the streams whose filter selects ev, in
// configuration order.
func (r Routes) Select(ev *route.Event) []string {
	var out []string
	for _, s := range r.Streams {
		if s.Filter.Match(ev) {
			out = append(out, s.Name)
		}
	}
	return out
}
