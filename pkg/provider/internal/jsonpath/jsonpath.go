// Package jsonpath reads members of a verified JSON body by dotted path
// ("data.object.customer", "entry.0.id"), for the adapters whose paths are
// tenant settings or a list of alternatives rather than a fixed shape.
package jsonpath

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Decode decodes body into a generic document with numbers kept exact
// (json.Number), for Field. The body must hold exactly one JSON value: data
// after it is malformed, as the provider docs promise. It returns an error
// wrapping webhook.ErrMalformed.
func Decode(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not JSON: data after the value")
	}
	return doc, nil
}

// Field returns the value at a dotted path of doc: strings unquoted, numbers
// and booleans in their JSON text, objects and arrays as compact JSON. ok is
// false when the path does not exist or holds null. The path "" is doc
// itself. A "*" segment maps the rest of the path over every element of an
// array ("events.*.webhookEventId"), giving the JSON array of the values
// found.
func Field(doc any, path string) (string, bool) {
	var parts []string
	if path != "" {
		parts = strings.Split(path, ".")
	}
	v, ok := resolve(doc, parts)
	if !ok {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return "", false
		}
		return string(b), true
	}
}

// resolve returns the value at parts of v; ok is false when it is missing
// or null.
func resolve(v any, parts []string) (any, bool) {
	for i, part := range parts {
		switch node := v.(type) {
		case map[string]any:
			next, found := node[part]
			if !found {
				return nil, false
			}
			v = next
		case []any:
			if part == "*" {
				all := make([]any, 0, len(node))
				for _, elem := range node {
					if x, ok := resolve(elem, parts[i+1:]); ok {
						all = append(all, x)
					}
				}
				return all, true
			}
			n, err := strconv.Atoi(part)
			if err != nil || n < 0 || n >= len(node) {
				return nil, false
			}
			v = node[n]
		default:
			return nil, false
		}
	}
	return v, v != nil
}

// Text returns Field's value, "" when there is none.
func Text(doc any, path string) string {
	v, _ := Field(doc, path)
	return v
}
