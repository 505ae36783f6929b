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

// Required returns the text at path as First does. It returns an error
// wrapping webhook.ErrMalformed, "<what> has no <path>", when there is
// none: what names the object for the sender ("event", "update 3").
func Required(doc any, what, path string) (string, error) {
	if v := First(doc, path); v != "" {
		return v, nil
	}
	return "", webhook.Errorf(webhook.ErrMalformed, "%s has no %s", what, path)
}
