// Command check validates a tenant's configuration files before
// scripts/tenant/tenant.sh writes them to Parameter Store: the same checks
// the functions apply when they load it (tenantid.Validate, Inbound.Validate,
// Outbound.Validate), plus unknown JSON fields and filters naming a sender
// that the build does not know or the inbound file does not enable, so a misspelt "secret"
// fails here instead of on the first webhook. Every problem of the id and
// both files is named in one run, not only the first. Errors name the
// tenant and the field, never a secret.
//
//	go run ./scripts/tenant/check <tenant> <inbound.json> [outbound.json]
//
// With -routes it prints the routes parameter of an outbound file (its
// destinations' names and filters, tenant.Outbound.Routes) instead.
//
//	go run ./scripts/tenant/check -routes <outbound.json>
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/tenantid"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-routes" {
		if err := routes(os.Stdout, os.Args[2]); err != nil {
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
// both files, not only the first.
func run(args []string) error {
	if len(args) < 2 || len(args) > 3 {
		return errors.New("usage: check <tenant> <inbound.json> [outbound.json]")
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

// decode reads one JSON document from path into v. It returns nil, or
// errors.Join of a syntax error (then v is left empty), a type error (the
// first), every field v has no place for, and data after the document. Its
// errors never quote the file's content.
func decode(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	invalid := func(what string) error { return fmt.Errorf("%s is not valid JSON for a tenant: %s", path, what) }
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return invalid(describe(err))
	}
	end := dec.InputOffset()
	var errs []error
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		errs = append(errs, invalid("data after the object"))
	}
	// Decode goes on past a field of the wrong type, leaving the field
	// empty, and reports the first.
	if err := json.Unmarshal(b[:end], v); err != nil {
		errs = append(errs, invalid(describe(err)))
	}
	for _, f := range unknown("", doc, reflect.TypeOf(v)) {
		errs = append(errs, invalid(fmt.Sprintf("unknown field %q", f)))
	}
	return errors.Join(errs...)
}

// unknown returns the paths of the object keys of doc that a t has no
// field for, matched as encoding/json matches them (case-insensitively).
// DisallowUnknownFields would name only the first.
func unknown(path string, doc any, t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	at := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	var out []string
	switch d := doc.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(d)) {
			switch t.Kind() {
			case reflect.Map:
				out = append(out, unknown(at(k), d[k], t.Elem())...)
			case reflect.Struct:
				if f, ok := field(t, k); ok {
					out = append(out, unknown(at(k), d[k], f.Type)...)
				} else {
					out = append(out, at(k))
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice {
			for i, e := range d {
				out = append(out, unknown(fmt.Sprintf("%s[%d]", path, i), e, t.Elem())...)
			}
		}
	}
	return out
}

// field returns the field of struct type t that encoding/json fills from
// key.
func field(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if strings.EqualFold(name, key) {
			return f, true
		}
	}
	return reflect.StructField{}, false
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
