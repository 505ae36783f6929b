// Command check validates a tenant's configuration files before
// scripts/tenant/tenant.sh writes them to Parameter Store: the same checks
// the functions apply when they load it (tenantid.Validate, Inbound.Validate,
// Outbound.Validate), plus unknown JSON fields, so a misspelt "secret"
// fails here instead of on the first webhook. Errors name the tenant and
// the field, never a secret.
//
//	go run ./scripts/tenant/check <tenant> <inbound.json> [outbound.json]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/tenantid"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tenant:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 || len(args) > 3 {
		return errors.New("usage: check <tenant> <inbound.json> [outbound.json]")
	}
	id := args[0]
	if err := tenantid.Validate(id); err != nil {
		return fmt.Errorf("tenant %q: %w", id, err)
	}
	var in tenant.Inbound
	if err := decode(args[1], &in); err != nil {
		return err
	}
	if err := in.Validate(id, provider.Registry()); err != nil {
		return err
	}
	if len(args) == 3 {
		var out tenant.Outbound
		if err := decode(args[2], &out); err != nil {
			return err
		}
		if err := out.Validate(id); err != nil {
			return err
		}
	}
	return nil
}

// decode reads one JSON document from path into v, refusing unknown fields
// and trailing data. Its errors never quote the file's content.
func decode(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s is not valid JSON for a tenant: %s", path, describe(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s is not valid JSON for a tenant: data after the object", path)
	}
	return nil
}

// describe keeps what locates a JSON error (offset, field, type) and drops
// anything that could quote a value.
func describe(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("syntax error at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %s must be %s", typ.Field, typ.Type)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end"
	default:
		return err.Error() // unknown field "…": names the field only
	}
}
