package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/replay"
)

var now = time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC)

// fakeInspector answers like inspect.Inspector over a fixed DLQ: it checks
// its input with inspect's own checks first.
type fakeInspector struct {
	dead map[string][]replay.Item // tenant → its dead letters
}

func (f *fakeInspector) Summarize(_ context.Context, id string) (inspect.Summary, error) {
	if err := inspect.CheckTenant(id); err != nil {
		return inspect.Summary{}, err
	}
	s := inspect.Summary{Tenant: id, Now: now, Queue: inspect.Depth{QueueURL: "https://sqs.test/1/hp_" + id + ".fifo", Visible: 3, DeadLetters: len(f.dead[id])}}
	if id == "demo" {
		s.Destinations = []inspect.DestinationSummary{
			{Destination: inspect.Destination{Name: "billing"}, Paused: &destination.Pause{Since: now.Add(-time.Hour), Reason: "their maintenance", By: destination.Operator}},
			{Destination: inspect.Destination{Name: "audit"}},
		}
	}
	return s, nil
}

func (f *fakeInspector) Inspect(_ context.Context, q inspect.Query) ([]inspect.Journey, error) {
	if err := q.Check(inspect.Providers()); err != nil {
		return nil, err
	}
	if q.Event == "done-1" {
		return []inspect.Journey{{Tenant: q.Tenant, Key: q.Tenant + "#github#done-1", State: inspect.StateDone, Why: "every effect recorded is done"}}, nil
	}
	for _, it := range f.dead[q.Tenant] {
		if (replay.Filter{Event: q.Event}).Match(it) {
			return []inspect.Journey{{Tenant: q.Tenant, Key: it.EventKey, State: inspect.StateDeadLettered, Why: "its message is in the tenant's DLQ", DeadLetter: &it,
				Queue: inspect.Depth{QueueURL: "https://sqs.test/1/hp_" + q.Tenant + ".fifo"}}}, nil
		}
	}
	return nil, fmt.Errorf("%w %q of tenant %s", inspect.ErrUnknownEvent, q.Event, q.Tenant)
}

func (f *fakeInspector) DeadLetters(_ context.Context, id string) (inspect.Depth, []replay.Item, []string, error) {
	if err := inspect.CheckTenant(id); err != nil {
		return inspect.Depth{}, nil, nil, err
	}
	items, ok := f.dead[id]
	if !ok {
		return inspect.Depth{}, nil, nil, fmt.Errorf("%w %s", inspect.ErrUnknownTenant, id)
	}
	return inspect.Depth{DeadLetterRetentionSeconds: 14 * 86400}, items, nil, nil
}

func (f *fakeInspector) EffectRuns(_ context.Context, id string, since time.Time) ([]inspect.EffectRun, error) {
	if err := inspect.CheckTenant(id); err != nil {
		return nil, err
	}
	if len(f.dead[id]) == 0 {
		return nil, nil
	}
	return []inspect.EffectRun{{Effect: "forward:billing", Event: "demo#stripe#evt_2", At: since.Add(time.Second)}}, nil
}

func (f *fakeInspector) IDs(context.Context) ([]string, error) {
	var ids []string
	for id := range f.dead {
		ids = append(ids, id)
	}
	return ids, nil
}

// fakeRedriver records each call and answers as replay.Redrive would.
type fakeRedriver struct {
	dead  []replay.Item
	calls []redriveCall
}

type redriveCall struct {
	dlq, src string
	f        replay.Filter
	dryRun   bool
}

func (f *fakeRedriver) Redrive(_ context.Context, dlq, src string, flt replay.Filter, dryRun bool) ([]replay.Item, error) {
	f.calls = append(f.calls, redriveCall{dlq, src, flt, dryRun})
	var out []replay.Item
	for _, it := range f.dead {
		switch {
		case !flt.Match(it):
			it.Status, it.Note = replay.StatusHeld, replay.NoteFilter
		case dryRun:
			it.Status = replay.StatusWouldMove
		default:
			it.Status = replay.StatusMoved
		}
		out = append(out, it)
	}
	return out, nil
}

func (f *fakeRedriver) Envelope(_ context.Context, dlq, id string) (*envelope.Envelope, error) {
	for _, it := range f.dead {
		if it.MessageID == id {
			e := &envelope.Envelope{Key: it.EventKey, Headers: map[string]string{"x-github-event": "issues", "x-hub-signature-256": "sha256=0123"}}
			e.SetBody([]byte(`{"issue":{"number":8}}`))
			return e, nil
		}
	}
	return nil, fmt.Errorf("%w %s in %s", replay.ErrNotListed, id, dlq)
}

type fakePauser struct{ calls []string }

func (p *fakePauser) Pause(_ context.Context, t, d, reason string) (string, error) {
	p.calls = append(p.calls, "pause "+t+" "+d+" "+reason)
	return "paused " + t + "/" + d, nil
}

func (p *fakePauser) Resume(_ context.Context, t, d string) (string, error) {
	p.calls = append(p.calls, "resume "+t+" "+d)
	return "resumed " + t + "/" + d, nil
}

var deadItems = []replay.Item{
	{MessageID: "m1", GroupID: "octo/hello#8", EventKey: "demo#github#sha256:aa", EventID: "delivery-1", Reason: "effect forward: target rejected the event: answered 400 Bad Request", SentAt: now.Add(-time.Minute)},
	{MessageID: "m2", GroupID: "cus_1", EventKey: "demo#stripe#evt_2", EventID: "evt_2", Reason: "destination billing: answered 422", SentAt: now.Add(-2 * time.Minute)},
	{MessageID: "m3", GroupID: "cus_2|forward:audit", EventKey: "demo#stripe#evt_3", EventID: "evt_3", Reason: "answered 410", Stream: "forward:audit", SentAt: now.Add(-3 * time.Minute)},
}

func newServer(t *testing.T, token string, pauser Pauser) (*Server, *fakeRedriver) {
	t.Helper()
	in := &fakeInspector{dead: map[string][]replay.Item{"demo": deadItems, "acme": nil}}
	rd := &fakeRedriver{dead: deadItems}
	s, err := New(Config{Inspector: in, EffectRuns: in, DeadLetters: rd, Tenants: in, QueueURLTemplate: "https://sqs.test/1/hp_{tenant}.fifo",
		Token: token, Pauser: pauser, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return s, rd
}

type request struct {
	method, target string
	form           url.Values
	host           string
	header         map[string]string
}

func (s *Server) do(r request) (*http.Response, string) {
	var body io.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	}
	req := httptest.NewRequest(r.method, r.target, body)
	if r.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Host = "127.0.0.1:3002"
	if r.host != "" {
		req.Host = r.host
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec.Result(), rec.Body.String()
}

// form is v with the server's CSRF token.
func (s *Server) form(kv ...string) url.Values {
	v := url.Values{"csrf": {s.csrf}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

func TestHandlers(t *testing.T) {
	s, _ := newServer(t, "", nil)
	tests := []struct {
		name string
		req  request
		code int
		want []string
	}{
		{"overview", request{method: "GET", target: "/"}, 200, []string{`id="tenant-acme"`, `id="tenant-demo"`, "reloads every 10 s"}},
		{"overview from a name that is not loopback", request{method: "GET", target: "/", host: "attacker.example:3002"}, 403, []string{"is not a loopback name"}},
		{"overview from localhost", request{method: "GET", target: "/", host: "localhost:3002"}, 200, []string{"tenant-demo"}},
		{"overview from [::1]", request{method: "GET", target: "/", host: "[::1]:3002"}, 200, []string{"tenant-demo"}},
		{"event by its sender's id", request{method: "GET", target: "/event?tenant=demo&id=delivery-1"}, 200, []string{"demo#github#sha256:aa", "DEAD LETTERED", `id="replay-event"`}},
		{"event with no id", request{method: "GET", target: "/event?tenant=demo&id="}, 400, []string{"malformed event: no id given"}},
		{"event of a malformed tenant", request{method: "GET", target: "/event?tenant=Bad_T&id=x"}, 400, []string{"malformed tenant id &#34;Bad_T&#34;"}},
		{"event key of another tenant", request{method: "GET", target: "/event?tenant=demo&id=" + url.QueryEscape("acme#github#x")}, 400, []string{"its tenant is acme, not demo"}},
		{"event key of an unknown provider", request{method: "GET", target: "/event?tenant=demo&id=" + url.QueryEscape("demo#nosuch#x")}, 400, []string{"&#34;nosuch&#34; is not a provider"}},
		{"unknown event", request{method: "GET", target: "/event?tenant=demo&id=nope"}, 404, []string{"no trace of the event &#34;nope&#34;"}},
		{"dead letters", request{method: "GET", target: "/dead-letters"}, 200, []string{`id="count">3<`, "delivery-1", "evt_2", "billing", "in 13d23h"}},
		{"dead letters by sender", request{method: "GET", target: "/dead-letters?sender=stripe"}, 200, []string{`id="count">2<`}},
		{"dead letters by destination", request{method: "GET", target: "/dead-letters?tenant=demo&destination=billing"}, 200, []string{`id="count">1<`, "evt_2", `id="redrive-selection"`}},
		{"dead letters by a destination's stream", request{method: "GET", target: "/dead-letters?tenant=demo&destination=audit"}, 200, []string{`id="count">1<`, "evt_3"}},
		{"dead letters by reason", request{method: "GET", target: "/dead-letters?reason=BAD+REQUEST"}, 200, []string{`id="count">1<`, "delivery-1"}},
		{"dead letters of an unknown tenant", request{method: "GET", target: "/dead-letters?tenant=nosuch"}, 404, []string{"no queue for the tenant nosuch"}},
		{"chart", request{method: "GET", target: "/chart?tenant=demo"}, 200, []string{`id="total">1<`, "billing: 1 delivered", "<polyline", `<td>billing</td><td><a href="/event?tenant=demo&amp;id=demo%23stripe%23evt_2">`}},
		{"chart of a bad window", request{method: "GET", target: "/chart?tenant=demo&minutes=0"}, 400, []string{"minutes &#34;0&#34;: a whole number from 1 to 60"}},
		{"chart of an idle tenant", request{method: "GET", target: "/chart?tenant=acme"}, 200, []string{`id="total">0<`, "no delivery completed in this window"}},
		{"chart of an unknown tenant", request{method: "GET", target: "/chart?tenant=nosuch"}, 404, []string{"no tenant nosuch in this stack"}},
		{"chart of a malformed tenant", request{method: "GET", target: "/chart?tenant=-x"}, 400, []string{"malformed tenant id"}},
		{"a preview is a POST", request{method: "GET", target: "/redrive/preview"}, 405, nil},
		{"preview without a CSRF token", request{method: "POST", target: "/redrive/preview", form: url.Values{"tenant": {"demo"}, "scope": {"event"}, "event": {"delivery-1"}}}, 403, []string{"missing or wrong CSRF token"}},
		{"preview with a wrong CSRF token", request{method: "POST", target: "/redrive/preview", form: url.Values{"csrf": {"x" + s.csrf}, "tenant": {"demo"}, "scope": {"event"}, "event": {"delivery-1"}}}, 403, []string{"missing or wrong CSRF token"}},
		{"redrive without a CSRF token", request{method: "POST", target: "/redrive", form: url.Values{"tenant": {"demo"}, "message": {"m1"}}}, 403, []string{"missing or wrong CSRF token"}},
		{"preview of an empty event", request{method: "POST", target: "/redrive/preview", form: s.form("tenant", "demo", "scope", "event", "event", "")}, 400, []string{"malformed event: no id given"}},
		{"preview of another tenant's key", request{method: "POST", target: "/redrive/preview", form: s.form("tenant", "demo", "scope", "event", "event", "acme#stripe#evt_2")}, 400, []string{"its tenant is acme, not demo"}},
		{"preview of a malformed tenant", request{method: "POST", target: "/redrive/preview", form: s.form("tenant", "", "scope", "event", "event", "x")}, 400, []string{"malformed tenant id"}},
		{"preview of no conversation", request{method: "POST", target: "/redrive/preview", form: s.form("tenant", "demo", "scope", "conversation")}, 400, []string{"no conversation given"}},
		{"preview of an unknown scope", request{method: "POST", target: "/redrive/preview", form: s.form("tenant", "demo", "scope", "everything")}, 400, []string{"scope &#34;everything&#34;: one of event, conversation or selection"}},
		{"preview of a selection that matches nothing", request{method: "POST", target: "/redrive/preview", form: s.form("tenant", "demo", "scope", "selection", "sender", "shopify")}, 404, []string{"no dead letter selected: none of the 3 dead letters of tenant demo seen matches dead letters with sender &#34;shopify&#34;"}},
		{"preview of an event that is done", request{method: "POST", target: "/redrive/preview", form: s.form("tenant", "demo", "scope", "event", "event", "done-1")}, 404, []string{"not dead-lettered: DONE (every effect recorded is done)"}},
		{"preview of no such event", request{method: "POST", target: "/redrive/preview", form: s.form("tenant", "demo", "scope", "event", "event", "nope")}, 404, []string{"event nope: no such event"}},
		{"preview of a conversation without dead letters", request{method: "POST", target: "/redrive/preview", form: s.form("tenant", "demo", "scope", "conversation", "conversation", "cus_9")}, 404, []string{"no dead letter of tenant demo is in conversation cus_9"}},
		{"redrive of messages gone since the dry run", request{method: "POST", target: "/redrive", form: s.form("tenant", "demo", "message", "m9")}, 404, []string{"none of the 1 message(s) the dry run listed is in the DLQ of demo now"}},
		{"redrive of nothing", request{method: "POST", target: "/redrive", form: s.form("tenant", "demo")}, 400, []string{"no dead letter selected to move"}},
		{"redrive of a malformed tenant", request{method: "POST", target: "/redrive", form: s.form("tenant", "a b", "message", "m1")}, 400, []string{"malformed tenant id"}},
		{"pause without a pauser", request{method: "POST", target: "/destinations/pause", form: s.form("tenant", "demo", "destination", "billing")}, 501, []string{"pausing a destination is not available"}},
		{"a dead letter's body, asked for", request{method: "GET", target: "/dead-letters/body?tenant=demo&message=m1"}, 200, []string{"x-github-event", "issues", "&#34;number&#34;: 8", "withheld (credentials): x-hub-signature-256"}},
		{"the body of no dead letter", request{method: "GET", target: "/dead-letters/body?tenant=demo&message=m9"}, 404, []string{"no such dead letter m9"}},
		{"the body of no message named", request{method: "GET", target: "/dead-letters/body?tenant=demo"}, 400, []string{"no dead letter named"}},
		{"unknown page", request{method: "GET", target: "/nosuch"}, 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := s.do(tt.req)
			if resp.StatusCode != tt.code {
				t.Errorf("%s %s = %d, want %d\n%s", tt.req.method, tt.req.target, resp.StatusCode, tt.code, text(body))
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("%s %s: body lacks %q:\n%s", tt.req.method, tt.req.target, w, text(body))
				}
			}
		})
	}
}

// text is an HTML page's text, for failure messages.
func text(html string) string {
	if i := strings.Index(html, "<main>"); i >= 0 {
		html = html[i:]
	}
	return strings.Join(strings.Fields(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(html, " ")), " ")
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="message" value="([^"]*)">`)

// A dry run moves nothing and its confirmation carries exactly the
// messages it would move; the confirmation moves those, no other.
func TestPreviewThenRedrive(t *testing.T) {
	tests := []struct {
		name   string
		form   []string
		filter replay.Filter
		moving []string
	}{
		{"one event by its sender's id", []string{"scope", "event", "event", "delivery-1"}, replay.Filter{Event: "delivery-1", Keys: []string{"demo#github#sha256:aa"}}, []string{"m1"}},
		{"one event by its key", []string{"scope", "event", "event", "demo#stripe#evt_3"}, replay.Filter{Event: "demo#stripe#evt_3", Keys: []string{"demo#stripe#evt_3"}}, []string{"m3"}},
		{"a conversation", []string{"scope", "conversation", "conversation", "cus_1"}, replay.Filter{Conversation: "cus_1"}, []string{"m2"}},
		{"a selection by sender", []string{"scope", "selection", "sender", "stripe"}, replay.Filter{Messages: []string{"m2", "m3"}}, []string{"m2", "m3"}},
		{"a selection by reason", []string{"scope", "selection", "reason", "answered 4"}, replay.Filter{Messages: []string{"m1", "m2", "m3"}}, []string{"m1", "m2", "m3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, rd := newServer(t, "", nil)
			resp, body := s.do(request{method: "POST", target: "/redrive/preview", form: s.form(append([]string{"tenant", "demo"}, tt.form...)...)})
			if resp.StatusCode != 200 {
				t.Fatalf("preview = %d\n%s", resp.StatusCode, text(body))
			}
			if len(rd.calls) != 1 || !rd.calls[0].dryRun || fmt.Sprint(rd.calls[0].f) != fmt.Sprint(tt.filter) ||
				rd.calls[0].dlq != "https://sqs.test/1/hp_demo-dlq.fifo" || rd.calls[0].src != "https://sqs.test/1/hp_demo.fifo" {
				t.Fatalf("preview called %+v, want one dry run of %+v from hp_demo-dlq.fifo to hp_demo.fifo", rd.calls, tt.filter)
			}
			var moving []string
			for _, m := range hiddenRE.FindAllStringSubmatch(body, -1) {
				moving = append(moving, m[1])
			}
			if !slices.Equal(moving, tt.moving) {
				t.Fatalf("the confirmation moves %v, want %v", moving, tt.moving)
			}
			for _, id := range []string{"m1", "m2", "m3"} {
				if listed := strings.Contains(body, "<code>"+id+"</code>"); listed != slices.Contains(tt.moving, id) {
					t.Errorf("preview lists %s: %v, want %v (only what would move)", id, listed, !listed)
				}
			}
			form := s.form("tenant", "demo")
			form["message"] = moving
			resp, body = s.do(request{method: "POST", target: "/redrive", form: form})
			if resp.StatusCode != 200 || !strings.Contains(body, fmt.Sprintf(`id="moved">%d message(s) of demo moved`, len(tt.moving))) {
				t.Fatalf("redrive = %d, want 200 and %d moved\n%s", resp.StatusCode, len(tt.moving), text(body))
			}
			if len(rd.calls) != 2 || rd.calls[1].dryRun || !slices.Equal(rd.calls[1].f.Messages, tt.moving) || rd.calls[1].f.Event != "" || rd.calls[1].f.Conversation != "" {
				t.Errorf("redrive called %+v, want a move of exactly %v", rd.calls[1:], tt.moving)
			}
		})
	}
}

// A console bound beyond loopback answers only requests with its token.
func TestToken(t *testing.T) {
	const token = "0123456789abcdef"
	s, _ := newServer(t, token, nil)
	tests := []struct {
		name   string
		req    request
		code   int
		cookie bool
	}{
		{"no token", request{method: "GET", target: "/", host: "console.internal:3002"}, 401, false},
		{"a wrong token", request{method: "GET", target: "/?token=" + token + "0", host: "console.internal:3002"}, 401, false},
		{"the token in the URL", request{method: "GET", target: "/?token=" + token, host: "console.internal:3002"}, 200, true},
		{"the token's cookie", request{method: "GET", target: "/dead-letters", host: "10.0.0.5:3002", header: map[string]string{"Cookie": tokenCookie + "=" + token}}, 200, false},
		{"a wrong cookie", request{method: "GET", target: "/dead-letters", host: "10.0.0.5:3002", header: map[string]string{"Cookie": tokenCookie + "=nope"}}, 401, false},
		{"a bearer token", request{method: "GET", target: "/", header: map[string]string{"Authorization": "Bearer " + token}}, 200, false},
		{"a POST without the token", request{method: "POST", target: "/redrive", form: s.form("tenant", "demo", "message", "m1")}, 401, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := s.do(tt.req)
			if resp.StatusCode != tt.code {
				t.Errorf("%s %s = %d, want %d\n%s", tt.req.method, tt.req.target, resp.StatusCode, tt.code, text(body))
			}
			if tt.code == 401 && !strings.Contains(body, "open it with the URL it printed at start") {
				t.Errorf("401 body lacks its reason:\n%s", text(body))
			}
			if got := strings.Contains(resp.Header.Get("Set-Cookie"), tokenCookie+"="+token); got != tt.cookie {
				t.Errorf("Set-Cookie %q: sets the token's cookie %v, want %v", resp.Header.Get("Set-Cookie"), got, tt.cookie)
			}
		})
	}
}

func TestListen(t *testing.T) {
	for _, tt := range []struct {
		addr      string
		wantToken bool
	}{{"127.0.0.1:0", false}, {"[::1]:0", false}, {"0.0.0.0:0", true}} {
		ln, token, err := Listen(tt.addr)
		if err != nil {
			if strings.Contains(tt.addr, "::1") {
				continue // no IPv6 loopback on this machine
			}
			t.Fatalf("Listen(%s) = %v", tt.addr, err)
		}
		ln.Close()
		if (token != "") != tt.wantToken || tt.wantToken && len(token) < 32 {
			t.Errorf("Listen(%s) token %q, want a token: %v", tt.addr, token, tt.wantToken)
		}
	}
	ln, _, _ := Listen("127.0.0.1:0")
	defer ln.Close()
	if _, _, err := Listen(ln.Addr().String()); err == nil || !strings.Contains(err.Error(), "set CONSOLE_ADDR") {
		t.Errorf("Listen on a taken address = %v, want an error naming CONSOLE_ADDR", err)
	}
}

func TestPauseHandler(t *testing.T) {
	p := &fakePauser{}
	s, _ := newServer(t, "", p)
	_, body := s.do(request{method: "GET", target: "/"})
	for _, want := range []string{"PAUSED</span> paused since 2026-12-06T17:00:00Z (1h0m0s ago) by operator: their maintenance",
		`<input type="hidden" name="destination" value="billing"><button class="resume">`, `<input type="hidden" name="destination" value="audit"><input name="reason"`} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q:\n%s", want, text(body))
		}
	}
	if strings.Count(body, `action="/destinations/`) != 2 {
		t.Errorf("overview has %d pause or resume forms, want 2 (resume billing, pause audit)", strings.Count(body, `action="/destinations/`))
	}
	if _, body := newServerBody(t); strings.Contains(body, "/destinations/") {
		t.Errorf("a console without a Pauser offers pause or resume")
	}
	for _, tt := range []struct {
		path string
		form url.Values
		code int
		want string
	}{
		{"/destinations/pause", s.form("tenant", "demo", "destination", "billing", "reason", "maintenance"), 200, "pause demo billing maintenance"},
		{"/destinations/resume", s.form("tenant", "demo", "destination", "billing"), 200, "resume demo billing"},
		{"/destinations/pause", s.form("tenant", "demo"), 400, ""},
		{"/destinations/pause", s.form("tenant", "demo", "destination", "Bad Name"), 400, ""},
		{"/destinations/resume", s.form("tenant", "-x", "destination", "billing"), 400, ""},
		{"/destinations/pause", url.Values{"tenant": {"demo"}, "destination": {"billing"}, "reason": {"x"}}, 403, ""},
	} {
		n := len(p.calls)
		resp, body := s.do(request{method: "POST", target: tt.path, form: tt.form})
		called := len(p.calls) > n
		if resp.StatusCode != tt.code || called != (tt.want != "") || called && p.calls[n] != tt.want {
			t.Errorf("POST %s %v = %d, calls %v; want %d and %q\n%s", tt.path, tt.form, resp.StatusCode, p.calls[n:], tt.code, tt.want, text(body))
		}
	}
}

// newServerBody is the overview of a console without a Pauser.
func newServerBody(t *testing.T) (*http.Response, string) {
	s, _ := newServer(t, "", nil)
	return s.do(request{method: "GET", target: "/"})
}

func TestStatus(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("x: %w", inspect.ErrMalformed), 400},
		{fmt.Errorf("x: %w", ErrBadRequest), 400},
		{fmt.Errorf("x: %w", inspect.ErrUnknownTenant), 404},
		{fmt.Errorf("x: %w", inspect.ErrUnknownEvent), 404},
		{fmt.Errorf("x: %w", destination.ErrInvalid), 400},
		{fmt.Errorf("x: %w", destination.ErrUnknown), 404},
		{fmt.Errorf("x: %w", destination.ErrUnknownTenant), 404},
		{fmt.Errorf("x: %w", ErrNotPausable), 501},
		{context.DeadlineExceeded, 504},
		{errors.New("sqs: throttled"), 502},
	} {
		if got := status(tt.err); got != tt.want {
			t.Errorf("status(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestDrawChart(t *testing.T) {
	from := now.Add(-time.Minute)
	runs := []inspect.EffectRun{
		{Effect: "forward:billing", At: from},
		{Effect: "forward:billing", At: from.Add(4 * time.Second)},
		{Effect: "forward:billing", At: from.Add(30 * time.Second)},
		{Effect: "forward", At: now},                          // the window's last second
		{Effect: "forward", At: from.Add(-time.Second)},       // before it
		{Effect: "mark-paid", At: from.Add(59 * time.Second)}, // a custom effect
	}
	c := drawChart(runs, from, now, 5*time.Second)
	got := map[string]string{}
	for _, s := range c.Series {
		got[s.Name] = fmt.Sprintf("%d peak %.1f", s.Total, s.Peak)
	}
	want := map[string]string{"billing": "3 peak 0.4", "forward (the event)": "1 peak 0.2", "mark-paid (custom effect)": "1 peak 0.2"}
	if fmt.Sprint(got) != fmt.Sprint(want) || c.Total != 5 || c.Max != 0.5 {
		t.Errorf("drawChart() = %v, total %d, max %v; want %v, total 5, max 0.5", got, c.Total, c.Max, want)
	}
	if empty := drawChart(nil, from, now, 5*time.Second); empty.Max != 1 || len(empty.Series) != 0 {
		t.Errorf("drawChart(nil) = max %v, %d series; want 1, none", empty.Max, len(empty.Series))
	}
}

// An inline handler resolves a bare confirm against its form's elements
// first (a control named or with the id "confirm" would shadow it, and the
// submit would go ahead unasked): every confirmation calls window.confirm.
func TestConfirmationsCallWindowConfirm(t *testing.T) {
	names, err := templateFS.ReadDir("templates")
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	for _, n := range names {
		b, err := templateFS.ReadFile("templates/" + n.Name())
		if err != nil {
			t.Fatal(err)
		}
		asked += strings.Count(string(b), "return window.confirm(")
		if regexp.MustCompile(`[^.]confirm\(`).Match(b) {
			t.Errorf("templates/%s calls a bare confirm(): use window.confirm", n.Name())
		}
	}
	if asked < 3 {
		t.Errorf("found %d confirmations (a move, a pause, a resume), want 3", asked)
	}
}
