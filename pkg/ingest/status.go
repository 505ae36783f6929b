package ingest

import (
	"errors"
	"net/http"

	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/tenantid"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Handler-level sentinels, alongside those of webhook, tenant and queue.
var (
	errNotFound         = errors.New("not found")
	errMethodNotAllowed = errors.New("method not allowed")
	errBadEncoding      = errors.New("body is not valid base64")
	errBodyTooLarge     = errors.New("body too large")
	errUnavailable      = errors.New("temporarily unavailable")
)

// outcome names one request result in logs and metrics.
type outcome string

const (
	outAccepted    outcome = "accepted"
	outDuplicate   outcome = "duplicate"
	outReused      outcome = "id_reused"
	outHeldBack    outcome = "held_back"
	outHandshake   outcome = "handshake"
	outSignature   outcome = "rejected_signature"
	outStale       outcome = "rejected_stale"
	outMalformed   outcome = "rejected_malformed"
	outForbidden   outcome = "rejected_forbidden"
	outNotFound    outcome = "not_found"
	outTooLarge    outcome = "too_large"
	outMethod      outcome = "method_not_allowed"
	outBadTenantID outcome = "invalid_tenant"
	outError       outcome = "error"
)

// classify is the one place where errors become HTTP statuses. The message
// is what the sender reads: sentinel texts and provider details, which never
// contain secrets or bodies; internal errors get a generic message and are
// logged instead.
func classify(err error) (status int, out outcome, msg string) {
	switch {
	case errors.Is(err, tenantid.ErrInvalid):
		return http.StatusBadRequest, outBadTenantID, err.Error()
	case errors.Is(err, errNotFound), errors.Is(err, tenant.ErrNotFound):
		// One message for unknown tenant and disabled provider: the sender
		// learns nothing about which tenants exist.
		return http.StatusNotFound, outNotFound, "unknown tenant or provider"
	case errors.Is(err, errMethodNotAllowed):
		return http.StatusMethodNotAllowed, outMethod, err.Error()
	case errors.Is(err, webhook.ErrMissingSignature), errors.Is(err, webhook.ErrInvalidSignature):
		return http.StatusUnauthorized, outSignature, err.Error()
	case errors.Is(err, webhook.ErrStale):
		return http.StatusUnauthorized, outStale, err.Error()
	case errors.Is(err, webhook.ErrForbidden):
		return http.StatusForbidden, outForbidden, err.Error()
	case errors.Is(err, webhook.ErrMalformed), errors.Is(err, errBadEncoding):
		return http.StatusBadRequest, outMalformed, err.Error()
	case errors.Is(err, errBodyTooLarge), errors.Is(err, queue.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, outTooLarge, err.Error()
	case errors.Is(err, errUnavailable):
		return http.StatusServiceUnavailable, outError, "temporarily unavailable, retry later"
	case errors.Is(err, tenant.ErrInvalid):
		// The log line names the tenant and the field; the sender learns
		// only that it should retry once the operator has fixed it.
		return http.StatusInternalServerError, outError, "tenant configuration is invalid, retry later"
	case errors.Is(err, webhook.ErrMisconfigured):
		return http.StatusInternalServerError, outError, "provider is misconfigured for this tenant"
	default:
		return http.StatusInternalServerError, outError, "internal error, retry later"
	}
}
