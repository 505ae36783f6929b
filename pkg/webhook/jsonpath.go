package webhook

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Field extracts the value at a dotted path ("data.object.customer",
// "entry.0.id") from a JSON document. Strings are returned unquoted, numbers
// and booleans in their JSON text; objects and arrays are returned as compact
// JSON. ok is false when the path does not exist or holds null.
func Field(doc any, path string) (string, bool) {
	v := doc
	if path != "" {
		for _, part := range strings.Split(path, ".") {
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

// DecodeJSON decodes body into a generic document, keeping numbers exact
// (json.Number), for use with Field. It returns an error wrapping
// ErrMalformed. Like json.Decoder it reads the first JSON value and ignores
// anything after it. Adapters use Scan instead, which is strict and reads
// only the members they need.
func DecodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, errorf(ErrMalformed, "body is not JSON: %v", err)
	}
	return doc, nil
}
