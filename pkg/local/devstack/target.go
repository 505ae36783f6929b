package devstack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
)

// Demo markers: a forwarded body containing PoisonMarker is refused with
// 422 (permanent: the worker dead-letters it), one containing FlakyMarker is
// answered 503 on its first attempt (transient: the worker retries it).
const (
	PoisonMarker = "hookpack-demo-poison"
	FlakyMarker  = "hookpack-demo-flaky"
)

// Applied is one effect the target applied.
type Applied struct {
	Tenant         string    `json:"tenant"`
	Provider       string    `json:"provider"`
	EventID        string    `json:"eventId"`
	Type           string    `json:"type"`
	Conversation   string    `json:"conversation"`
	IdempotencyKey string    `json:"idempotencyKey"`
	At             time.Time `json:"at"`
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
// tenant's outbound secrets, deduplicates by Idempotency-Key (as a
// well-behaved receiver must) and records what it applied, in order.
//
//	POST /tenants/{tenant}/events   a forwarded event
//	GET  /applied                   every applied effect, in order (JSON)
//	GET  /stats                     counters (JSON)
type Target struct {
	tenants map[string]tenant.Outbound
	logger  *slog.Logger
	now     func() time.Time

	mu      sync.Mutex
	seen    map[string]bool
	flaked  map[string]bool
	applied []Applied
	stats   Stats
}

// NewTarget returns a target verifying with each tenant's outbound secrets.
func NewTarget(tenants map[string]tenant.Outbound, logger *slog.Logger) *Target {
	return &Target{tenants: tenants, logger: logger, now: time.Now, seen: map[string]bool{}, flaked: map[string]bool{}}
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
		writeJSON(w, t.Applied())
	case r.Method == http.MethodGet && r.URL.Path == "/stats":
		writeJSON(w, t.Stats())
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/tenants/") && strings.HasSuffix(r.URL.Path, "/events"):
		t.receive(w, r, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/tenants/"), "/events"))
	default:
		http.NotFound(w, r)
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
	if err := VerifyForward(r.Header, body, out.Secrets); err != nil {
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
		Tenant: tenantID, IdempotencyKey: key, At: t.now(),
		Provider: r.Header.Get("Hookpack-Provider"), EventID: r.Header.Get("Hookpack-Event-Id"),
		Type: r.Header.Get("Hookpack-Event-Type"), Conversation: r.Header.Get("Hookpack-Conversation"),
	}
	log := t.logger.With(slog.String("stage", "target"), slog.String("tenantId", tenantID), slog.String("provider", a.Provider),
		slog.String("eventId", a.EventID), slog.String("conversation", a.Conversation))

	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.seen[key]:
		t.stats.Duplicates++
		log.Info("target: duplicate ignored (Idempotency-Key seen)", slog.String("outcome", "duplicate"))
		w.WriteHeader(http.StatusOK)
	case bytes.Contains(body, []byte(PoisonMarker)):
		t.stats.Refused++
		log.Info("target: refused poison event (422)", slog.String("outcome", "refused"))
		http.Error(w, "demo poison event: unprocessable", http.StatusUnprocessableEntity)
	case bytes.Contains(body, []byte(FlakyMarker)) && !t.flaked[key]:
		t.flaked[key] = true
		log.Info("target: failing first attempt (503)", slog.String("outcome", "flaky"))
		w.Header().Set("Retry-After", "1")
		http.Error(w, "demo flaky target", http.StatusServiceUnavailable)
	default:
		t.seen[key] = true
		t.applied = append(t.applied, a)
		t.stats.Applied++
		log.Info("target: effect applied", slog.String("outcome", "applied"), slog.String("type", a.Type))
		w.WriteHeader(http.StatusOK)
	}
}

func (t *Target) count(f func(*Stats)) {
	t.mu.Lock()
	f(&t.stats)
	t.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
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
