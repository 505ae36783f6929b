package devstack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// Applied is one effect the target applied.
type Applied struct {
	Tenant       string `json:"tenant"`
	Provider     string `json:"provider"`
	EventID      string `json:"eventId"`
	Type         string `json:"type"`
	Conversation string `json:"conversation"`
	// Destination is the destination's name (Hookpack-Destination); empty
	// for a tenant's legacy targetUrl.
	Destination    string    `json:"destination,omitempty"`
	IdempotencyKey string    `json:"idempotencyKey"`
	At             time.Time `json:"at"`
}

// PerSecond counts the effects of applied (in the order applied) in each
// second from the first one's: what a rate limit is checked against.
func PerSecond(applied []Applied) []int {
	var out []int
	for _, a := range applied {
		sec := int(a.At.Sub(applied[0].At) / time.Second)
		for len(out) <= sec {
			out = append(out, 0)
		}
		out[sec]++
	}
	return out
}

// Stats are the target's counters.
type Stats struct {
	Applied    int `json:"applied"`
	Duplicates int `json:"duplicates"`
	Rejected   int `json:"rejected"`
	Refused    int `json:"refused"`
}

// Target is the local stand-in for a tenant's own service, the forward
// effect's destination: it verifies the Standard Webhooks signature with the
// tenant's outbound secrets (the named destination's, by the
// Hookpack-Destination header), deduplicates by Idempotency-Key (as a
// well-behaved receiver must) and records what it applied, in order. Its
// rules (Rule) make it refuse, hang or rate-limit forwards on request.
//
//	POST   /tenants/{tenant}/events  a forwarded event
//	GET    /applied                  every applied effect, in order (JSON)
//	GET    /stats                    counters (JSON)
//	POST   /control?<rule>           adds a rule (ParseRule); 400 when the query is not one
//	GET    /control                  the rules, in the order they are checked (JSON)
//	DELETE /control[?id=<id>]        removes that rule, or all but BuiltinRules
type Target struct {
	tenants map[string]tenant.Outbound
	logger  *slog.Logger
	now     func() time.Time

	mu      sync.Mutex
	rules   []*rule
	lastID  int
	seen    map[string]bool
	applied []Applied
	stats   Stats
}

// NewTarget returns a target verifying with each tenant's outbound secrets,
// with BuiltinRules.
func NewTarget(tenants map[string]tenant.Outbound, logger *slog.Logger) *Target {
	t := &Target{tenants: tenants, logger: logger, now: time.Now, seen: map[string]bool{}}
	t.Reset()
	return t
}

// Reset sets the rules back to BuiltinRules, under their first ids (1, 2);
// the ids of the rules it removes are not given again.
func (t *Target) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = nil
	for i, r := range BuiltinRules {
		t.rules = append(t.rules, &rule{Rule: r, id: i + 1, met: map[string]int{}})
	}
	t.lastID = max(t.lastID, len(t.rules))
}

// AddRule adds r after the target's rules and returns its id.
func (t *Target) AddRule(r Rule) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.add(r)
}

func (t *Target) add(r Rule) int {
	t.lastID++
	t.rules = append(t.rules, &rule{Rule: r, id: t.lastID, met: map[string]int{}})
	return t.lastID
}

// RemoveRule removes the rule with that id, and reports whether there was one.
func (t *Target) RemoveRule(id int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.rules)
	t.rules = slices.DeleteFunc(t.rules, func(r *rule) bool { return r.id == id })
	return len(t.rules) < n
}

// ControlRule is a rule as GET /control lists it: its id and its query.
type ControlRule struct {
	ID   int    `json:"id"`
	Rule string `json:"rule"`
}

// Rules returns the rules in the order they are checked.
func (t *Target) Rules() []ControlRule {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ControlRule, 0, len(t.rules))
	for _, r := range t.rules {
		out = append(out, ControlRule{ID: r.id, Rule: r.String()})
	}
	return out
}

// Applied returns a copy of the applied effects in order.
func (t *Target) Applied() []Applied {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Applied(nil), t.applied...)
}

// Stats returns the counters.
func (t *Target) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// ServeHTTP implements the routes above.
func (t *Target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/applied":
		writeJSON(w, http.StatusOK, t.Applied())
	case r.Method == http.MethodGet && r.URL.Path == "/stats":
		writeJSON(w, http.StatusOK, t.Stats())
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/tenants/") && strings.HasSuffix(r.URL.Path, "/events"):
		t.receive(w, r, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/tenants/"), "/events"))
	case r.URL.Path == "/control":
		t.control(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (t *Target) control(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, t.Rules())
	case http.MethodPost:
		rule, err := ParseRule(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := t.AddRule(rule)
		t.logger.Info(fmt.Sprintf("target: rule %d added: %s", id, rule), slog.Int("rule", id))
		writeJSON(w, http.StatusCreated, ControlRule{ID: id, Rule: rule.String()})
	case http.MethodDelete:
		switch q := r.URL.Query(); {
		case len(q) == 0:
			t.Reset()
			t.logger.Info("target: rules reset")
		case q.Has("id") && len(q) == 1:
			id, err := strconv.Atoi(q.Get("id"))
			if err != nil || !t.RemoveRule(id) {
				http.Error(w, "no rule "+q.Get("id"), http.StatusNotFound)
				return
			}
		default:
			http.Error(w, "DELETE /control takes no query, or id=<id>", http.StatusBadRequest)
			return
		}
		writeJSON(w, http.StatusOK, t.Rules())
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (t *Target) receive(w http.ResponseWriter, r *http.Request, tenantID string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, queue.MaxOffloadBytes)) // the largest event the pack carries
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	out, ok := t.tenants[tenantID]
	if !ok {
		http.NotFound(w, r)
		return
	}
	secrets, err := destinationSecrets(out, r.Header.Get("Hookpack-Destination"))
	if err == nil {
		err = VerifyForward(r.Header, body, secrets)
	}
	if err != nil {
		t.count(func(s *Stats) { s.Rejected++ })
		t.logger.Warn("target rejected delivery", slog.String("tenantId", tenantID), slog.String("error", err.Error()))
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, "Idempotency-Key header is required", http.StatusBadRequest)
		return
	}
	a := Applied{
		Tenant: tenantID, IdempotencyKey: key,
		Provider: r.Header.Get("Hookpack-Provider"), EventID: r.Header.Get("Hookpack-Event-Id"),
		Type: r.Header.Get("Hookpack-Event-Type"), Conversation: r.Header.Get("Hookpack-Conversation"),
		Destination: r.Header.Get("Hookpack-Destination"),
	}
	log := t.logger.With(slog.String("stage", "target"), slog.String("tenantId", tenantID), slog.String("provider", a.Provider),
		slog.String("eventId", a.EventID), slog.String("conversation", a.Conversation))

	f := delivery{tenant: tenantID, event: a.EventID, conversation: a.Conversation, key: key, body: body}
	t.mu.Lock()
	now := t.now()
	v := decide(t.rules, f, now)
	count(t.rules, f, v, now)
	t.mu.Unlock()
	if v.hang > 0 {
		log.Info("target: holding the answer", slog.String("outcome", "hang"), slog.Duration("hang", v.hang))
		select {
		case <-time.After(v.hang):
		case <-r.Context().Done(): // the sender gave up, or the target stops
		}
	}
	if v.status != 0 {
		t.count(func(s *Stats) { s.Refused++ })
		log.Info(fmt.Sprintf("target: refused (%d, rule %d)", v.status, v.refusedBy), slog.String("outcome", "refused"))
		if v.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(v.retryAfter/time.Second)))
		}
		http.Error(w, fmt.Sprintf("refused by the target's rule %d", v.refusedBy), v.status)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen[key] {
		t.stats.Duplicates++
		log.Info("target: duplicate ignored (Idempotency-Key seen)", slog.String("outcome", "duplicate"))
		w.WriteHeader(http.StatusOK)
		return
	}
	t.seen[key] = true
	a.At = t.now()
	t.applied = append(t.applied, a)
	t.stats.Applied++
	log.Info("target: effect applied", slog.String("outcome", "applied"), slog.String("type", a.Type))
	w.WriteHeader(http.StatusOK)
}

// destinationSecrets returns the secrets a forward to destination name of
// out is signed with: the legacy targetUrl's when name is empty.
func destinationSecrets(out tenant.Outbound, name string) ([]string, error) {
	if name == "" {
		if len(out.Destinations) > 0 {
			return nil, errors.New("the tenant has destinations: a forward without a Hookpack-Destination header names none")
		}
		return out.Secrets, nil
	}
	for _, d := range out.Destinations {
		if d.Name == name {
			return d.Secrets, nil
		}
	}
	return nil, fmt.Errorf("the tenant has no destination %q", name)
}

func (t *Target) count(f func(*Stats)) {
	t.mu.Lock()
	f(&t.stats)
	t.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // a rule's query keeps its &
	_ = enc.Encode(v)
}

// ErrNoSecret: a tenant without outbound secrets cannot verify a forward.
var ErrNoSecret = errors.New("no outbound secret configured")

// VerifyForward checks a forward as a tenant's endpoint does: with the
// official Standard Webhooks library (its five-minute timestamp tolerance
// included), under any of the tenant's secrets, as during a rotation. The
// error names no secret.
func VerifyForward(h http.Header, body []byte, secrets []string) error {
	err := ErrNoSecret
	for i, secret := range secrets {
		wh, werr := standardwebhooks.NewWebhook(secret)
		if werr != nil {
			return fmt.Errorf("outbound secret %d is not a Standard Webhooks secret", i+1)
		}
		if err = wh.Verify(body, h); err == nil {
			return nil
		}
	}
	return fmt.Errorf("standard webhooks: %w", err)
}
