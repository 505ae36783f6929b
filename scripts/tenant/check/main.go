// Command check validates tenant configuration files without any AWS call:
// the same checks the functions apply when they load them
// (tenantid.Validate, Inbound.Validate, Outbound.Validate), plus unknown
// JSON fields (tenant.Decode) and filters naming a sender that the build
// does not know or the inbound configuration does not enable, so a
// misspelt "secret" fails here instead of on the first webhook, and a
// misspelt "event" in a filter instead of selecting every event. Every
// problem is named in one run, not only the first; errors name the file,
// the tenant and the field, never a secret. It exits 1 on any problem.
//
// With a tenant id first, it checks the files scripts/tenant/tenant.sh add
// writes to Parameter Store; with files only (the first argument has a "."
// or "/", which no tenant id has), each is a tenants file in make run's
// format (events/tenants.json), checked as make run loads it
// (tenant.LoadFile).
//
//	go run ./scripts/tenant/check <tenant> <inbound.json> [outbound.json]
//	go run ./scripts/tenant/check <tenants.json>...
//
// With -routes it prints the routes parameter of an outbound file (its
// destinations' names and filters, tenant.Outbound.Routes) instead.
//
//	go run ./scripts/tenant/check -routes <outbound.json>
//
// With -receives it checks a tenant queue's MaxReceiveCount against the core
// stack's WorkerMaxAttempts (worker.MinMaxReceiveCount), as tenant.sh add
// does before it creates or updates the tenant's stack.
//
//	go run ./scripts/tenant/check -receives <MaxReceiveCount> <WorkerMaxAttempts>
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/tenantid"
	"github.com/hookpack/hookpack/pkg/worker"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-routes" {
		if err := routes(os.Stdout, os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "tenant:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "-receives" {
		if err := receives(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "tenant:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, "tenant:", line)
		}
		os.Exit(1)
	}
}

// run returns nil, or errors.Join of every problem of the tenant id and
// both files, or of every tenants file, not only the first.
func run(args []string) error {
	if len(args) > 0 && strings.ContainsAny(args[0], "./") {
		var errs []error
		for _, path := range args {
			if _, err := tenant.LoadFile(path, provider.Registry()); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	if len(args) < 2 || len(args) > 3 {
		return errors.New("usage: check <tenant> <inbound.json> [outbound.json] | check <tenants.json>...")
	}
	id := args[0]
	var errs []error
	if err := tenantid.Validate(id); err != nil {
		errs = append(errs, fmt.Errorf("tenant %q: %w", id, err))
	}
	var in tenant.Inbound
	inErr := decode(args[1], &in)
	errs = append(errs, inErr, in.Validate(id, provider.Registry()))
	if len(args) == 3 {
		var out tenant.Outbound
		if err := decode(args[2], &out); err != nil {
			errs = append(errs, err)
		}
		// An inbound file that did not decode enables nothing: it is not
		// held against the filters.
		enabled := &in
		if inErr != nil && in.Providers == nil {
			enabled = nil
		}
		errs = append(errs, out.ValidateWith(id, provider.Registry(), enabled))
	}
	return errors.Join(errs...)
}

// routes writes the routes parameter of the outbound file at path to w.
func routes(w io.Writer, path string) error {
	var out tenant.Outbound
	if err := decode(path, &out); err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(out.Routes())
}

// receives returns nil when a tenant queue's maxReceiveCount (count) leaves
// the last word to a worker that gives up after attempts failed attempts:
// the worker then dead-letters a failing message itself, with its reason,
// before SQS's redrive moves it without one (worker.MinMaxReceiveCount;
// attempts 0 turns the worker's count off, leaving the queue's as the only
// one). Otherwise it returns an error that says what to set.
func receives(count, attempts string) error {
	n, err := strconv.Atoi(count)
	if err != nil || n < 2 || n > maxReceiveCount {
		return fmt.Errorf("MAX_RECEIVE_COUNT=%s: not a whole number from 2 to %d", count, maxReceiveCount)
	}
	a, err := strconv.Atoi(attempts)
	if err != nil || a < 0 {
		return fmt.Errorf("the core stack's WorkerMaxAttempts %q is not a whole number ≥ 0", attempts)
	}
	least := worker.MinMaxReceiveCount(a)
	switch {
	case a == 0 || n >= least:
		return nil
	case least > maxReceiveCount:
		most := a
		for worker.MinMaxReceiveCount(most) > maxReceiveCount {
			most--
		}
		return fmt.Errorf("the core stack's WorkerMaxAttempts %d needs a tenant MaxReceiveCount of at least %d, above SQS's %d: lower WorkerMaxAttempts to at most %d",
			a, least, maxReceiveCount, most)
	}
	return fmt.Errorf("MaxReceiveCount %d is below %d, the least for the core stack's WorkerMaxAttempts %d: SQS would move a failing message to the DLQ without its reason before the worker gives up on it; set MAX_RECEIVE_COUNT=%d or more (at most %d)",
		n, least, a, least, maxReceiveCount)
}

// maxReceiveCount is the most SQS's redrive policy allows.
const maxReceiveCount = 1000

// decode reads one JSON document from path into v (tenant.Decode).
func decode(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return tenant.Decode(path+" is not valid JSON for a tenant", b, v)
}
