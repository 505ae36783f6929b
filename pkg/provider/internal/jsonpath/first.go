package jsonpath

import "github.com/hookpack/hookpack/pkg/webhook"

// Object decodes body as Decode does and returns an error wrapping
// webhook.ErrMalformed unless it is a JSON object.
func Object(body []byte) (any, error) {
	doc, err := Decode(body)
	if err != nil {
		return nil, err
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a JSON object")
	}
	return doc, nil
}

// First returns the first of paths that holds a string or number, as text,
// "" when none does (an object or array never counts: ids and keys are
// scalars).
func First(doc any, paths ...string) string {
	for _, p := range paths {
		if v := Text(doc, p); v != "" && v[0] != '{' && v[0] != '[' {
			return v
		}
	}
	return ""
}
