package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/destination"
	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/replay"
)

// inspector reads what package inspect tells of tenants, events and dead
// letters (inspect.Inspector). It is called from concurrent requests.
type inspector interface {
	Summarize(ctx context.Context, tenantID string) (inspect.Summary, error)
	Inspect(ctx context.Context, q inspect.Query) ([]inspect.Journey, error)
	DeadLetters(ctx context.Context, tenantID string) (inspect.Depth, []replay.Item, []string, error)
}

// effectRuns reads when a tenant's effects ran (inspect.Inspector's
// EffectRuns: a Scan of the ledger, made only when the chart is asked for).
type effectRuns interface {
	EffectRuns(ctx context.Context, tenantID string, since time.Time) ([]inspect.EffectRun, error)
}

// replayer moves a tenant's dead letters back and reads one's envelope
// (replay.Replayer). Each call receives from the DLQ and hides its
// messages while it runs, so the console makes one such call at a time.
type replayer interface {
	Redrive(ctx context.Context, dlqURL, sourceURL string, f replay.Filter, dryRun bool) ([]replay.Item, error)
	Envelope(ctx context.Context, dlqURL, messageID string) (*envelope.Envelope, error)
}

// tenantLister lists the onboarded tenants (tenant.SSM).
type tenantLister interface {
	IDs(ctx context.Context) ([]string, error)
}

// Pauser pauses and resumes a tenant's destination: the one place the
// console's pause and resume buttons call (destination.Pauser, as
// scripts/destination pauses). It returns what it did, as a sentence.
// Nil: the buttons are not shown.
type Pauser interface {
	Pause(ctx context.Context, tenantID, destination, reason string) (string, error)
	Resume(ctx context.Context, tenantID, destination string) (string, error)
}

// Config wires a Server.
type Config struct {
	Inspector   inspector
	EffectRuns  effectRuns
	DeadLetters replayer
	Tenants     tenantLister
	// QueueURLTemplate is the tenants' queue URL with "{tenant}"
	// (inspect.Deployment's): a tenant's DLQ is next to it.
	QueueURLTemplate string
	// Pauser is nil where destinations cannot be paused.
	Pauser Pauser
	// Token, when set, is required of every request (Listen returns one
	// for a non-loopback address); without it, requests must name a
	// loopback Host.
	Token string
	// Stack names the deployment in the pages' title.
	Stack string
	// Refresh is how often the overview reloads itself (default 10 s).
	Refresh time.Duration
	Now     func() time.Time
	// Logger receives internal errors only (a failed store call).
	Logger *slog.Logger
}

// Server is the console's HTTP handler.
type Server struct {
	cfg  Config
	csrf string
	mux  *http.ServeMux
	// dlq serializes the calls that receive from a DLQ (a summary, a
	// lookup, a listing, a redrive): one hides messages from the others.
	dlq sync.Mutex
}

// Sentinel errors of the console's own input checks.
var (
	// ErrBadRequest: the form or query lacks what the page needs, or has
	// a value that cannot name anything.
	ErrBadRequest = errors.New("bad request")
	// ErrNotPausable: the console was not given a Pauser.
	ErrNotPausable = errors.New("pausing a destination is not available")
)

//go:embed templates/*.html
var templateFS embed.FS

var pages = parsePages()

// parsePages parses each page with the layout.
func parsePages() map[string]*template.Template {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	out := map[string]*template.Template{}
	for _, name := range []string{"overview", "event", "deadletters", "body", "preview", "moved", "chart", "error", "done"} {
		out[name] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+name+".html"))
	}
	return out
}

// New returns the console's handler. It returns an error when a required
// dependency is missing.
func New(cfg Config) (*Server, error) {
	if cfg.Inspector == nil || cfg.EffectRuns == nil || cfg.DeadLetters == nil || cfg.Tenants == nil || cfg.QueueURLTemplate == "" {
		return nil, errors.New("console: Inspector, EffectRuns, DeadLetters, Tenants and QueueURLTemplate are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, csrf: randomToken(), mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /{$}", s.overview)
	s.mux.HandleFunc("GET /event", s.event)
	s.mux.HandleFunc("GET /dead-letters", s.deadLetters)
	s.mux.HandleFunc("GET /dead-letters/body", s.body)
	s.mux.HandleFunc("GET /chart", s.chart)
	s.mux.HandleFunc("POST /redrive/preview", s.csrfOnly(s.preview))
	s.mux.HandleFunc("POST /redrive", s.csrfOnly(s.redrive))
	s.mux.HandleFunc("POST /destinations/pause", s.csrfOnly(s.pause(true)))
	s.mux.HandleFunc("POST /destinations/resume", s.csrfOnly(s.pause(false)))
	return s, nil
}

// DefaultAddr is where the console listens unless told otherwise:
// loopback, so no token is needed (make console's CONSOLE_ADDR).
const DefaultAddr = "127.0.0.1:3002"

// Listen listens on addr and returns the access token every request must
// then carry: empty for a loopback address, random otherwise (a console
// reachable from other machines can move dead letters).
func Listen(addr string) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("console: listen on %s: %w (set CONSOLE_ADDR to use another address)", addr, err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		return ln, "", nil
	}
	return ln, randomToken(), nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// tokenCookie carries the access token once a URL with ?token= was opened.
const tokenCookie = "hookpack_console_token"

// ServeHTTP checks the caller (the access token, or a loopback Host), then
// serves the page.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	if s.cfg.Token == "" {
		if !loopbackHost(r.Host) {
			s.fail(w, r, http.StatusForbidden, fmt.Errorf("Host %q is not a loopback name: this console listens on loopback and answers only requests for it (a guard against DNS rebinding)", r.Host))
			return
		}
	} else if !s.authorized(w, r) {
		s.fail(w, r, http.StatusUnauthorized, errors.New("this console listens on a non-loopback address: open it with the URL it printed at start (…/?token=…), or send Authorization: Bearer <token>"))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// authorized reports whether r carries the access token: in ?token= (which
// then sets a cookie, so the console's own links need not carry it), in
// the cookie, or as a bearer token.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	same := func(v string) bool { return v != "" && subtle.ConstantTimeCompare([]byte(v), []byte(s.cfg.Token)) == 1 }
	if q := r.URL.Query().Get("token"); same(q) {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		return true
	}
	if c, err := r.Cookie(tokenCookie); err == nil && same(c.Value) {
		return true
	}
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && same(bearer)
}

// loopbackHost reports whether a request's Host names this machine's
// loopback: localhost or a loopback IP, with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// csrfOnly serves h only when the form carries the page's CSRF token.
func (s *Server) csrfOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got := r.PostFormValue("csrf")
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
			s.fail(w, r, http.StatusForbidden, errors.New("missing or wrong CSRF token: this request did not come from a page of this console; reload the page and submit its form again"))
			return
		}
		h(w, r)
	}
}

// status is the HTTP status of an error of a lookup or a move: the one
// place errors meet statuses.
func status(err error) int {
	switch {
	case errors.Is(err, inspect.ErrMalformed), errors.Is(err, ErrBadRequest), errors.Is(err, destination.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, inspect.ErrUnknownTenant), errors.Is(err, inspect.ErrUnknownEvent), errors.Is(err, inspect.ErrNoDeadLetter),
		errors.Is(err, replay.ErrNotListed), errors.Is(err, destination.ErrUnknown), errors.Is(err, destination.ErrUnknownTenant):
		return http.StatusNotFound
	case errors.Is(err, ErrNotPausable):
		return http.StatusNotImplemented
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// errorPage is what the error page shows.
type errorPage struct {
	page
	Status  int
	Message string
}

// fail answers err with code; a store's failure (5xx) is logged, the
// caller's mistakes are not.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	if code >= 500 {
		s.cfg.Logger.Error("console request failed", slog.String("path", r.URL.Path), slog.Int("status", code), slog.String("error", err.Error()))
	}
	s.render(w, code, "error", errorPage{page: s.page("Error"), Status: code, Message: err.Error()})
}

// page is what every page's layout needs.
type page struct {
	Title   string
	Stack   string
	CSRF    string
	Refresh int // seconds; 0: the page does not reload itself
	Now     time.Time
}

func (s *Server) page(title string) page {
	return page{Title: title, Stack: s.cfg.Stack, CSRF: s.csrf, Now: s.cfg.Now()}
}

// render writes page name with data; a template error is the console's bug.
func (s *Server) render(w http.ResponseWriter, code int, name string, data any) {
	var b strings.Builder
	if err := pages[name].ExecuteTemplate(&b, "layout.html", data); err != nil {
		s.cfg.Logger.Error("console template", slog.String("page", name), slog.String("error", err.Error()))
		http.Error(w, "console: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}
