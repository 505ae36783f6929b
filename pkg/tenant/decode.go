package tenant

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Decode reads the one JSON document b into v (a pointer) as encoding/json
// does, and refuses what encoding/json lets through: a field v has no place
// for (a misspelt "event" in a filter would otherwise select every event)
// and data after the document. It returns nil, or errors.Join of one error
// per problem, each starting with name: a syntax error (then v is left
// empty), a field of the wrong type (the first; the field is left empty),
// every unknown field by its path ("destinations[0].filter: unknown field
// \"event\""), and data after the document. Its errors never quote the
// document's values.
func Decode(name string, b []byte, v any) error {
	problem := func(what string) error { return fmt.Errorf("%s: %s", name, what) }
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return problem(describe(err))
	}
	end := dec.InputOffset()
	var errs []error
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		errs = append(errs, problem("data after the object"))
	}
	// Unmarshal goes on past a field of the wrong type, leaving the field
	// empty, and reports the first.
	if err := json.Unmarshal(b[:end], v); err != nil {
		errs = append(errs, problem(describe(err)))
	}
	for _, f := range unknown("", doc, reflect.TypeOf(v)) {
		errs = append(errs, problem(f))
	}
	return errors.Join(errs...)
}

var (
	unmarshaler     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// unknown returns a problem for each object key of doc, at path, that a t
// has no field for, matched as encoding/json matches them (exactly, else
// case-insensitively; an embedded struct's fields are its own). A type
// that decodes itself takes any value. json.Decoder.DisallowUnknownFields
// would name only the first, and without its path.
func unknown(path string, doc any, t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
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
				} else if path == "" {
					out = append(out, fmt.Sprintf("unknown field %q", k))
				} else {
					out = append(out, fmt.Sprintf("%s: unknown field %q", path, k))
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range d {
				out = append(out, unknown(fmt.Sprintf("%s[%d]", path, i), e, t.Elem())...)
			}
		}
	}
	return out
}

// field returns the field of struct type t that encoding/json fills from
// key: the one named exactly, else one named so but for case, looking into
// embedded structs as encoding/json does.
func field(t reflect.Type, key string) (reflect.StructField, bool) {
	var folded *reflect.StructField
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				continue // its fields are visible in t
			}
			name = f.Name
		}
		if name == key {
			return f, true
		}
		if folded == nil && strings.EqualFold(name, key) {
			folded = &f
		}
	}
	if folded != nil {
		return *folded, true
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
		return err.Error()
	}
}
