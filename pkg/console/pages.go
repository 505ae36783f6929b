package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/replay"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

// tenantView is one tenant of the overview: its summary, or why there is
// none.
type tenantView struct {
	ID      string
	Summary inspect.Summary
	Error   string
}

type overviewPage struct {
	page
	Tenants  []tenantView
	Pausable bool
}

// overview shows every tenant's summary (inspect's), and reloads itself.
func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	ids, err := s.cfg.Tenants.IDs(r.Context())
	if err != nil {
		s.fail(w, r, status(err), fmt.Errorf("list the tenants: %w", err))
		return
	}
	slices.Sort(ids)
	p := overviewPage{page: s.page("Tenants"), Pausable: s.cfg.Pauser != nil}
	p.Refresh = int(s.cfg.Refresh / time.Second)
	for _, id := range ids {
		v := tenantView{ID: id}
		s.dlq.Lock()
		v.Summary, err = s.cfg.Inspector.Summarize(r.Context(), id)
		s.dlq.Unlock()
		if err != nil {
			v.Error = err.Error()
		}
		p.Tenants = append(p.Tenants, v)
	}
	s.render(w, http.StatusOK, "overview", p)
}

type eventPage struct {
	page
	Tenant, ID, Provider string
	Scan                 bool
	Journeys             []inspect.Journey
}

// event finds an event by any id inspect resolves and tells its journey.
func (s *Server) event(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := eventPage{page: s.page("Event"), Tenant: strings.TrimSpace(q.Get("tenant")), ID: strings.TrimSpace(q.Get("id")),
		Provider: q.Get("provider"), Scan: q.Get("scan") != ""}
	s.dlq.Lock()
	js, err := s.cfg.Inspector.Inspect(r.Context(), inspect.Query{Tenant: p.Tenant, Event: p.ID, Provider: p.Provider, Scan: p.Scan})
	s.dlq.Unlock()
	if err != nil {
		s.fail(w, r, status(err), err)
		return
	}
	p.Journeys = js
	p.Title = "Event " + p.ID
	s.render(w, http.StatusOK, "event", p)
}

// deadLetter is one row of the dead-letter list.
type deadLetter struct {
	replay.Item
	Tenant       string
	Sender       string
	Destinations []string
	// Expires is when the DLQ's retention deletes it (zero: unknown).
	Expires time.Time
}

// deadLetterFilter selects dead letters; empty fields match all.
type deadLetterFilter struct {
	Tenant, Sender, Destination, Reason string
}

func filterOf(v url.Values) deadLetterFilter {
	return deadLetterFilter{Tenant: strings.TrimSpace(v.Get("tenant")), Sender: strings.TrimSpace(v.Get("sender")),
		Destination: strings.TrimSpace(v.Get("destination")), Reason: strings.TrimSpace(v.Get("reason"))}
}

// match reports whether f selects d: Reason is a case-insensitive part of
// its reason.
func (f deadLetterFilter) match(d deadLetter) bool {
	return (f.Tenant == "" || f.Tenant == d.Tenant) && (f.Sender == "" || f.Sender == d.Sender) &&
		(f.Destination == "" || slices.Contains(d.Destinations, f.Destination)) &&
		(f.Reason == "" || strings.Contains(strings.ToLower(d.Reason), strings.ToLower(f.Reason)))
}

type deadLettersPage struct {
	page
	Filter  deadLetterFilter
	Tenants []string
	Rows    []deadLetter
	Notes   []string
}

// deadLetters lists the dead letters of every tenant, or of the filter's.
func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	p := deadLettersPage{page: s.page("Dead letters"), Filter: filterOf(r.URL.Query())}
	var err error
	if p.Tenants, err = s.cfg.Tenants.IDs(r.Context()); err != nil {
		s.fail(w, r, status(err), fmt.Errorf("list the tenants: %w", err))
		return
	}
	slices.Sort(p.Tenants)
	tenants := p.Tenants
	if p.Filter.Tenant != "" {
		tenants = []string{p.Filter.Tenant}
	}
	for _, t := range tenants {
		rows, notes, err := s.listDeadLetters(r.Context(), t)
		if err != nil {
			s.fail(w, r, status(err), err)
			return
		}
		p.Notes = append(p.Notes, notes...)
		for _, d := range rows {
			if p.Filter.match(d) {
				p.Rows = append(p.Rows, d)
			}
		}
	}
	s.render(w, http.StatusOK, "deadletters", p)
}

// listDeadLetters lists tenant's DLQ through inspect.
func (s *Server) listDeadLetters(ctx context.Context, tenantID string) ([]deadLetter, []string, error) {
	s.dlq.Lock()
	depth, items, notes, err := s.cfg.Inspector.DeadLetters(ctx, tenantID)
	s.dlq.Unlock()
	if err != nil {
		return nil, nil, err
	}
	for i, n := range notes {
		notes[i] = tenantID + ": " + n
	}
	out := make([]deadLetter, len(items))
	for i, it := range items {
		// A destination's stream names it; a message without one, its
		// reason may.
		d := deadLetter{Item: it, Tenant: tenantID, Destinations: inspect.ReasonDestinations(it.Reason)}
		if name, ok := strings.CutPrefix(it.Stream, worker.DestinationEffect("")); ok && name != "" {
			d.Destinations = []string{name}
		}
		if parts := strings.SplitN(it.EventKey, "#", 3); len(parts) == 3 {
			d.Sender = parts[1]
		}
		if depth.DeadLetterRetentionSeconds > 0 && !it.SentAt.IsZero() {
			d.Expires = it.SentAt.Add(time.Duration(depth.DeadLetterRetentionSeconds) * time.Second)
		}
		out[i] = d
	}
	return out, notes, nil
}

type chartPage struct {
	page
	Tenant  string
	Minutes int
	Chart   chart
	// Recent are the latest deliveries, newest first.
	Recent []delivery
}

// delivery is one row of the recent deliveries.
type delivery struct {
	inspect.EffectRun
	Destination string
}

// recentRows is how many deliveries the chart's page lists.
const recentRows = 20

// chart draws the tenant's deliveries per second per destination over the
// last minutes, from the ledger's effect records (inspect's EffectRuns).
func (s *Server) chart(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := chartPage{page: s.page("Deliveries of " + q.Get("tenant")), Tenant: q.Get("tenant"), Minutes: 10}
	if m := q.Get("minutes"); m != "" {
		if _, err := fmt.Sscanf(m, "%d", &p.Minutes); err != nil || p.Minutes < 1 || p.Minutes > 60 {
			s.fail(w, r, http.StatusBadRequest, fmt.Errorf("%w minutes %q: a whole number from 1 to 60", ErrBadRequest, m))
			return
		}
	}
	to := s.cfg.Now().Truncate(time.Second)
	from := to.Add(-time.Duration(p.Minutes) * time.Minute)
	runs, err := s.cfg.EffectRuns.EffectRuns(r.Context(), p.Tenant, from)
	if err == nil && len(runs) == 0 {
		// The ledger knows no tenants: an empty chart of a tenant that is
		// not onboarded would read as an idle one.
		err = s.onboarded(r.Context(), p.Tenant)
	}
	if err != nil {
		s.fail(w, r, status(err), err)
		return
	}
	p.Refresh = int(s.cfg.Refresh / time.Second)
	p.Chart = drawChart(runs, from, to, step(p.Minutes))
	slices.SortStableFunc(runs, func(a, b inspect.EffectRun) int { return b.At.Compare(a.At) })
	for _, r := range runs[:min(len(runs), recentRows)] {
		p.Recent = append(p.Recent, delivery{EffectRun: r, Destination: seriesName(r.Effect)})
	}
	s.render(w, http.StatusOK, "chart", p)
}

// onboarded returns an error wrapping inspect.ErrUnknownTenant when the
// tenant is not in the stack's list.
func (s *Server) onboarded(ctx context.Context, tenantID string) error {
	ids, err := s.cfg.Tenants.IDs(ctx)
	if err != nil {
		return fmt.Errorf("list the tenants: %w", err)
	}
	if !slices.Contains(ids, tenantID) {
		return fmt.Errorf("%w %s: no tenant %s in this stack (is it onboarded?)", inspect.ErrUnknownTenant, tenantID, tenantID)
	}
	return nil
}

// step is a chart's bucket: 60 to 120 bars over the window.
func step(minutes int) time.Duration {
	if minutes <= 10 {
		return 5 * time.Second
	}
	return 30 * time.Second
}

// selection is what a redrive acts on, as the preview's form names it.
type selection struct {
	Tenant string
	// One of: an event (any id inspect takes), a conversation, or a
	// filter of the dead-letter list.
	Event, Conversation string
	Filter              deadLetterFilter
}

// describe says what s selects, for the pages.
func (sel selection) describe() string {
	switch {
	case sel.Event != "":
		return "event " + sel.Event
	case sel.Conversation != "":
		return "conversation " + sel.Conversation
	}
	var parts []string
	for _, kv := range [][2]string{{"sender", sel.Filter.Sender}, {"destination", sel.Filter.Destination}, {"reason containing", sel.Filter.Reason}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+fmt.Sprintf("%q", kv[1]))
		}
	}
	if len(parts) == 0 {
		return "every dead letter"
	}
	return "dead letters with " + strings.Join(parts, ", ")
}

type previewPage struct {
	page
	Tenant, What string
	Items        []replay.Item
	// Moving are the ids of the would-move items, which the confirmation
	// moves and nothing else.
	Moving []string
	Event  string
}

// preview is the dry run of a redrive: it lists exactly what would move,
// and its form moves those messages only. A selection of no dead letter
// is answered 404 with why, as scripts/replay says it.
func (s *Server) preview(w http.ResponseWriter, r *http.Request) {
	sel := selection{Tenant: strings.TrimSpace(r.PostFormValue("tenant")), Event: strings.TrimSpace(r.PostFormValue("event")),
		Conversation: strings.TrimSpace(r.PostFormValue("conversation")), Filter: filterOf(r.PostForm)}
	sel.Filter.Tenant = sel.Tenant
	f, none, err := s.replayFilter(r.Context(), sel, r.PostFormValue("scope"))
	if err != nil {
		s.fail(w, r, status(err), err)
		return
	}
	src, dlq, err := s.queues(sel.Tenant)
	if err != nil {
		s.fail(w, r, status(err), err)
		return
	}
	s.dlq.Lock()
	items, err := s.cfg.DeadLetters.Redrive(r.Context(), dlq, src, f, true)
	s.dlq.Unlock()
	if err != nil {
		err = unknownQueue(err, sel.Tenant, dlq)
		s.fail(w, r, status(err), fmt.Errorf("dry run: %w", err))
		return
	}
	p := previewPage{page: s.page("Dry run"), Tenant: sel.Tenant, What: sel.describe(), Event: sel.Event}
	// A dry run lists the DLQ's other messages too: only those selected
	// tell the operator something.
	p.Items = slices.DeleteFunc(items, func(it replay.Item) bool { return !f.Match(it) })
	if len(p.Items) == 0 {
		s.fail(w, r, http.StatusNotFound, none())
		return
	}
	for _, it := range p.Items {
		if it.Status == replay.StatusWouldMove {
			p.Moving = append(p.Moving, it.MessageID)
		}
	}
	s.render(w, http.StatusOK, "preview", p)
}

// replayFilter turns a selection into the filter of a redrive, refusing
// what the command-line tools refuse: a malformed tenant or event id, and
// (as here) a selection of nothing in particular. An event is looked up as
// scripts/replay looks it up (inspect's Inspect: the keys it resolves to).
// none says why a selection matched no dead letter (wrapping
// inspect.ErrNoDeadLetter).
func (s *Server) replayFilter(ctx context.Context, sel selection, scope string) (f replay.Filter, none func() error, err error) {
	if err := inspect.CheckTenant(sel.Tenant); err != nil {
		return f, nil, err
	}
	switch scope {
	case "event":
		q := inspect.Query{Tenant: sel.Tenant, Event: sel.Event}
		if err := q.Check(inspect.Providers()); err != nil {
			return f, nil, err
		}
		s.dlq.Lock()
		js, lookup := s.cfg.Inspector.Inspect(ctx, q)
		s.dlq.Unlock()
		if lookup != nil && !errors.Is(lookup, inspect.ErrUnknownEvent) {
			return f, nil, lookup
		}
		f = replay.Filter{Event: sel.Event}
		for _, j := range js {
			f.Keys = append(f.Keys, j.Key)
		}
		return f, func() error { return inspect.NotDeadLettered(sel.Event, js, lookup) }, nil
	case "conversation":
		if sel.Conversation == "" {
			return f, nil, fmt.Errorf("%w: no conversation given", ErrBadRequest)
		}
		return replay.Filter{Conversation: sel.Conversation}, func() error {
			return fmt.Errorf("%w: no dead letter of tenant %s is in conversation %s", inspect.ErrNoDeadLetter, sel.Tenant, sel.Conversation)
		}, nil
	case "selection":
		rows, _, err := s.listDeadLetters(ctx, sel.Tenant)
		if err != nil {
			return f, nil, err
		}
		for _, d := range rows {
			if sel.Filter.match(d) {
				f.Messages = append(f.Messages, d.MessageID)
			}
		}
		none := func() error {
			return fmt.Errorf("%w: none of the %d dead letters of tenant %s seen matches %s", inspect.ErrNoDeadLetter, len(rows), sel.Tenant, sel.describe())
		}
		if len(f.Messages) == 0 {
			return f, nil, none()
		}
		return f, none, nil
	}
	return f, nil, fmt.Errorf("%w scope %q: one of event, conversation or selection", ErrBadRequest, scope)
}

type movedPage struct {
	page
	Tenant string
	Items  []replay.Item
	Moved  int
	Error  string
	Event  string
}

// redrive moves the messages a dry run listed, and no other: each at most
// once (replay.Replayer.Redrive).
func (s *Server) redrive(w http.ResponseWriter, r *http.Request) {
	tenantID := strings.TrimSpace(r.PostFormValue("tenant"))
	if err := inspect.CheckTenant(tenantID); err != nil {
		s.fail(w, r, status(err), err)
		return
	}
	ids := r.PostForm["message"]
	if len(ids) == 0 || slices.Contains(ids, "") {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("%w: no dead letter selected to move (run the dry run again and confirm what it lists)", ErrBadRequest))
		return
	}
	src, dlq, err := s.queues(tenantID)
	if err != nil {
		s.fail(w, r, status(err), err)
		return
	}
	s.dlq.Lock()
	f := replay.Filter{Messages: ids}
	items, err := s.cfg.DeadLetters.Redrive(r.Context(), dlq, src, f, false)
	s.dlq.Unlock()
	p := movedPage{page: s.page("Redrive"), Tenant: tenantID, Event: r.PostFormValue("event")}
	p.Items = slices.DeleteFunc(items, func(it replay.Item) bool { return !f.Match(it) })
	for _, it := range p.Items {
		if it.Status == replay.StatusMoved {
			p.Moved++
		}
	}
	code := http.StatusOK
	if err == nil && len(p.Items) == 0 {
		err = fmt.Errorf("%w: none of the %d message(s) the dry run listed is in the DLQ of %s now (moved by another run, or deleted by its retention)",
			inspect.ErrNoDeadLetter, len(ids), tenantID)
	}
	if err != nil {
		// What moved stays moved: the page lists it with the error.
		err = unknownQueue(err, tenantID, dlq)
		code, p.Error = status(err), err.Error()
		s.cfg.Logger.Error("console redrive", "tenantId", tenantID, "error", err.Error())
	}
	s.render(w, code, "moved", p)
}

// queues returns the tenant's source queue and DLQ URLs.
func (s *Server) queues(tenantID string) (src, dlq string, err error) {
	src = queue.URL(s.cfg.QueueURLTemplate, tenantID)
	if dlq, err = worker.DLQURL(src); err != nil {
		return "", "", fmt.Errorf("queue URL template: %w", err)
	}
	return src, dlq, nil
}

// unknownQueue says an SQS QueueDoesNotExist as inspect and replay do: the
// tenant is not onboarded.
func unknownQueue(err error, tenantID, dlq string) error {
	var missing *sqstypes.QueueDoesNotExist
	if errors.As(err, &missing) {
		return fmt.Errorf("%w %s: %s does not exist (is the tenant onboarded in this stack?)", inspect.ErrUnknownTenant, tenantID, dlq)
	}
	return err
}

type donePage struct {
	page
	Message string
}

// pause returns the handler that pauses (or resumes) a destination through
// Config.Pauser.
func (s *Server) pause(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenantID, dest := strings.TrimSpace(r.PostFormValue("tenant")), strings.TrimSpace(r.PostFormValue("destination"))
		if s.cfg.Pauser == nil {
			s.fail(w, r, http.StatusNotImplemented, fmt.Errorf("%w: this console was started without the destinations' store", ErrNotPausable))
			return
		}
		if err := inspect.CheckTenant(tenantID); err != nil {
			s.fail(w, r, status(err), err)
			return
		}
		if err := tenant.CheckName(dest); err != nil {
			s.fail(w, r, http.StatusBadRequest, fmt.Errorf("%w: destination name %q: %w", ErrBadRequest, dest, err))
			return
		}
		var msg string
		var err error
		if pause {
			msg, err = s.cfg.Pauser.Pause(r.Context(), tenantID, dest, strings.TrimSpace(r.PostFormValue("reason")))
		} else {
			msg, err = s.cfg.Pauser.Resume(r.Context(), tenantID, dest)
		}
		if err != nil {
			s.fail(w, r, status(err), err)
			return
		}
		s.render(w, http.StatusOK, "done", donePage{page: s.page("Done"), Message: msg})
	}
}
