package inspect

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/tenantid"
)

// ErrMalformed: the tenant id, the event reference, the provider or an
// effect name cannot name anything; the message says what is wrong. It is
// the operator's input to fix, not a trace to look for (scripts/inspect
// exits 2).
var ErrMalformed = errors.New("malformed")

// CheckTenant returns an error wrapping ErrMalformed when id is not a
// tenant id (tenantid.Validate), before any store is read.
func CheckTenant(id string) error {
	if err := tenantid.Validate(id); err != nil {
		why := strings.TrimPrefix(err.Error(), tenantid.ErrInvalid.Error()+": ")
		return fmt.Errorf("%w tenant id %q: %s", ErrMalformed, id, why)
	}
	return nil
}

// Check returns nil when q can name an event, else an error joining one
// error wrapping ErrMalformed per problem, each saying what is wrong: the
// tenant id, an empty event, an event key ({tenant}#{provider}#{eventId})
// of another tenant, of a provider not in providers or with an empty event
// id, a -provider not in providers, an effect name the ledger refuses.
// providers are the provider names of the build; nil accepts any name.
func (q Query) Check(providers []string) error {
	var errs []error
	if err := CheckTenant(q.Tenant); err != nil {
		errs = append(errs, err)
	}
	known := func(p string) bool { return providers == nil || slices.Contains(providers, p) }
	if q.Provider != "" && !known(q.Provider) {
		errs = append(errs, fmt.Errorf("%w -provider %q: not a provider (%s)", ErrMalformed, q.Provider, strings.Join(providers, ", ")))
	}
	switch {
	case q.Event == "":
		errs = append(errs, fmt.Errorf("%w event: no id given", ErrMalformed))
	case isKey(q.Event):
		var why []string
		parts := strings.SplitN(q.Event, "#", 3)
		if parts[0] != q.Tenant {
			why = append(why, fmt.Sprintf("its tenant is %s, not %s", parts[0], q.Tenant))
		}
		switch {
		case !known(parts[1]):
			why = append(why, fmt.Sprintf("%q is not a provider (%s)", parts[1], strings.Join(providers, ", ")))
		case q.Provider != "" && parts[1] != q.Provider:
			why = append(why, fmt.Sprintf("its provider is %s, not %s", parts[1], q.Provider))
		}
		if parts[2] == "" {
			why = append(why, "the event id after the second '#' is empty")
		}
		if len(why) > 0 {
			errs = append(errs, fmt.Errorf("%w event key %q ({tenant}#{provider}#{eventId}): %s", ErrMalformed, q.Event, strings.Join(why, "; ")))
		}
	}
	for _, e := range q.Effects {
		if err := ledger.ValidEffect(e); err != nil {
			why := strings.TrimPrefix(err.Error(), ledger.ErrInvalidKey.Error()+": ")
			errs = append(errs, fmt.Errorf("%w -effects: %s", ErrMalformed, why))
		}
	}
	return errors.Join(errs...)
}

// isKey reports whether ref has the form of an idempotency key
// "{tenant}#{provider}#{id}": a tenant id, then two '#' at least (a
// sender's own id may hold one).
func isKey(ref string) bool {
	t, _, ok := strings.Cut(ref, "#")
	return ok && strings.Count(ref, "#") >= 2 && tenantid.Validate(t) == nil
}
