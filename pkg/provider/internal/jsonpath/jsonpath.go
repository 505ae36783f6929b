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
// itself.
func Field(doc any, path string) (string, bool) {
	v := doc
	if path != "" {
		for part := range strings.SplitSeq(path, ".") {
			switch node := v.(type) {
			case map[string]any:
				next, found := node[part]
				if !found {
					return "", false
				}
				v = next
			case []any:
				i, err := strconv.Atoi(part)
				if err != nil || i < 0 || i >= len(node) {
					return "", false
				}
				v = node[i]
			default:
				return "", false
			}
		}
	}
	switch x := v.(type) {
	case nil:
		return "", false
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

// Text returns Field's value, "" when there is none.
func Text(doc any, path string) string {
	v, _ := Field(doc, path)
	return v
}
