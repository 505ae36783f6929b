// Package jsonkeys supports the differential tests that hold the adapters'
// single-pass JSON extraction (webhook.Scan) to the encoding/json decoding
// they replaced.
//
// The two agree on every document except those with object keys that are
// ambiguous for encoding/json's struct decoding: it matches member names to
// fields case-insensitively (and with Unicode folding: "ID", "ſ" for "s")
// and merges a repeated object-valued key into the same struct, where Scan
// compares keys exactly and lets the last repeat win, as decoding into a map
// does. No provider sends such documents, and they are signed by the
// provider, so the adapters accept the difference; the tests skip them.
package jsonkeys

import (
	"bytes"
	"encoding/json"
)

// Ambiguous reports whether doc (valid JSON) has an object with a repeated
// key or a key that is not plain lower-case ASCII.
func Ambiguous(doc []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var stack []map[string]bool // keys seen per open object; nil for arrays
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, map[string]bool{})
				expectKey = true
				continue
			case '[':
				stack = append(stack, nil)
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
		case string:
			if expectKey {
				keys := stack[len(stack)-1]
				if keys[t] || !lowerASCII(t) {
					return true
				}
				keys[t] = true
				expectKey = false
				continue
			}
		}
		// After a value inside an object, the next token is a key.
		expectKey = len(stack) > 0 && stack[len(stack)-1] != nil
	}
}

func lowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}
