package webhook

import (
	"bytes"
	"errors"
	"mime"
	"net/url"
)

// Form is a URL-encoded body (application/x-www-form-urlencoded) read as
// url.ParseQuery reads it, without building a map or a string per field:
// names and values point into the body, or into one buffer for those that
// hold escapes ('+' is a space, %XX a byte), and keep body order.
type Form struct {
	body    []byte
	decoded []byte // unescaped names and values
	fields  []formField
}

type formField struct {
	name, value span
}

// span locates a name or value in the body or, when decoded, in the
// buffer of unescaped ones.
type span struct {
	start, end int
	decoded    bool
}

// maxFastFields bounds the fields ParseForm counts on its own. url.ParseQuery
// refuses more than a limit (10000 unless GODEBUG urlmaxqueryparams says
// otherwise); above this bound ParseForm lets it decide.
const maxFastFields = 1000

// ParseForm parses body, which must not change while the Form is in use. It
// returns an error exactly when url.ParseQuery would: a ';' in a field, a
// malformed %-escape, or more fields than url.ParseQuery accepts.
func ParseForm(body []byte) (Form, error) {
	var err error
	n := bytes.Count(body, []byte("&")) + 1
	if n > maxFastFields {
		if _, perr := url.ParseQuery(string(body)); perr != nil {
			return Form{}, perr
		}
	}
	semicolons := bytes.IndexByte(body, ';') >= 0
	escaped := bytes.IndexByte(body, '%') >= 0 || bytes.IndexByte(body, '+') >= 0
	f := Form{body: body, fields: make([]formField, 0, min(n, 64))}
	for off := 0; off < len(body); {
		end := indexFrom(body, off, '&')
		part := body[off:end]
		start := off
		off = end + 1
		if semicolons && bytes.IndexByte(part, ';') >= 0 {
			err = errSemicolon
			continue
		}
		if len(part) == 0 {
			continue
		}
		field := formField{name: span{start: start, end: end}, value: span{start: end, end: end}}
		if eq := bytes.IndexByte(part, '='); eq >= 0 {
			field.name.end = start + eq
			field.value.start = start + eq + 1
		}
		if escaped {
			mark := len(f.decoded)
			var ok bool
			if field.name, ok = f.unescape(field.name); ok {
				field.value, ok = f.unescape(field.value)
			}
			if !ok {
				f.decoded = f.decoded[:mark]
				if err == nil {
					err = errEscape
				}
				continue
			}
		}
		f.fields = append(f.fields, field)
	}
	return f, err
}

// unescape returns sp (a span of the body) as is when it holds no escape,
// or decoded into f.decoded.
func (f *Form) unescape(sp span) (span, bool) {
	raw := f.body[sp.start:sp.end]
	if bytes.IndexByte(raw, '%') < 0 && bytes.IndexByte(raw, '+') < 0 {
		return sp, true
	}
	start := len(f.decoded)
	var ok bool
	f.decoded, ok = appendUnescape(f.decoded, raw)
	return span{start: start, end: len(f.decoded), decoded: true}, ok
}

func (f Form) bytes(sp span) []byte {
	if sp.decoded {
		return f.decoded[sp.start:sp.end]
	}
	return f.body[sp.start:sp.end]
}

var (
	errSemicolon = errors.New("invalid semicolon separator in query")
	errEscape    = errors.New("invalid URL escape")
)

// appendUnescape appends s with '+' as a space and %XX as the byte XX, as
// url.QueryUnescape decodes it; ok is false when a '%' is not followed by
// two hex digits.
func appendUnescape(dst, s []byte) ([]byte, bool) {
	pct, plus := -1, -1 // the next '%' and '+' at or after i, or len(s)
	for i := 0; i < len(s); {
		if pct < i {
			pct = indexFrom(s, i, '%')
		}
		if plus < i {
			plus = indexFrom(s, i, '+')
		}
		j := min(pct, plus)
		dst = append(dst, s[i:j]...)
		switch {
		case j == len(s):
			return dst, true
		case j == plus:
			dst = append(dst, ' ')
			i = j + 1
		case j+2 < len(s) && isHex(s[j+1]) && isHex(s[j+2]):
			dst = append(dst, unhex(s[j+1])<<4|unhex(s[j+2]))
			i = j + 3
		default:
			return dst, false
		}
	}
	return dst, true
}

// indexFrom returns the index of the first c at or after i, or len(s).
func indexFrom(s []byte, i int, c byte) int {
	if j := bytes.IndexByte(s[i:], c); j >= 0 {
		return i + j
	}
	return len(s)
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// Get returns the first value of the field called name, or "" (as
// url.Values.Get does).
func (f Form) Get(name string) string {
	for _, fl := range f.fields {
		if string(f.bytes(fl.name)) == name {
			return string(f.bytes(fl.value))
		}
	}
	return ""
}

// Len returns the number of fields, repeated names counted each time.
func (f Form) Len() int { return len(f.fields) }

// Field returns the unescaped name and value of the i-th field in body
// order. They alias the body or the Form's buffer and must not be modified.
func (f Form) Field(i int) (name, value []byte) {
	fl := f.fields[i]
	return f.bytes(fl.name), f.bytes(fl.value)
}

// MediaType returns the media type of a Content-Type header, lower-case,
// with the error mime.ParseMediaType would return; the two types webhooks
// carry are recognised without parsing.
func MediaType(contentType string) (string, error) {
	switch contentType {
	case "application/json", "application/x-www-form-urlencoded":
		return contentType, nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return mt, err
}
