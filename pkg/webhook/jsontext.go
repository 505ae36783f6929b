package webhook

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"iter"
	"math/bits"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Text returns v as Field returns the same value of a decoded document: a
// string unescaped exactly as encoding/json decodes it (invalid UTF-8 and
// unpaired surrogates become U+FFFD), a number or boolean in its JSON text,
// an object or array as json.Marshal writes the decoded value (compact, keys
// sorted, HTML characters escaped); "" for null and missing values.
func (v Value) Text() string {
	switch v.Kind {
	case KindString:
		s := v.Raw[1 : len(v.Raw)-1]
		if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
			return string(s)
		}
		return string(appendUnquote(make([]byte, 0, len(s)), s))
	case KindNumber:
		return string(v.Raw)
	case KindBool:
		if v.Raw[0] == 't' {
			return "true"
		}
		return "false"
	case KindObject, KindArray:
		// Rare on the hot path: let encoding/json canonicalise, so the
		// result is byte for byte Field's.
		dec := json.NewDecoder(bytes.NewReader(v.Raw))
		dec.UseNumber()
		var x any
		if dec.Decode(&x) != nil {
			return ""
		}
		b, err := json.Marshal(x)
		if err != nil {
			return ""
		}
		return string(b)
	}
	return ""
}

// AsString returns what a Go string field decoded from v would hold: the
// unescaped string, or "" for null and missing values. ok is false for the
// other kinds, which encoding/json refuses to decode into a string.
func (v Value) AsString() (s string, ok bool) {
	switch v.Kind {
	case KindString:
		return v.Text(), true
	case KindMissing, KindNull:
		return "", true
	}
	return "", false
}

// Elements returns an iterator over the elements of an array value, each
// with its kind and raw text (a sub-slice of v.Raw, which Scan can scan
// again; Paths.Elements does both in one pass). It yields nothing for other
// kinds.
func (v Value) Elements() iter.Seq[Value] {
	return func(yield func(Value) bool) {
		for el := range (*Paths)(nil).Elements(v, nil) {
			if !yield(el) {
				return
			}
		}
	}
}

// AppendCompact appends v's raw text without insignificant whitespace: byte
// for byte what encoding/json writes for a json.RawMessage holding it when
// HTML escaping is off. A missing value appends nothing.
func (v Value) AppendCompact(dst []byte) []byte {
	raw := v.Raw
	s := scanner{data: raw}
	start := 0
	for i := 0; i < len(raw); {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			dst = append(dst, raw[start:i]...)
			i = s.ws(i)
			start = i
		case '"':
			end, _, err := s.str(i + 1)
			if err != nil { // not a scanned value: copy the rest as is
				return append(dst, raw[start:]...)
			}
			i = end
		default:
			i++
		}
	}
	return append(dst, raw[start:]...)
}

// appendUnquote appends the decoded content of a JSON string (the text
// between its quotes, already validated) as encoding/json decodes it.
func appendUnquote(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c < utf8.RuneSelf && c != '\\':
			j := i + 1
			for j < len(s) && s[j] < utf8.RuneSelf && s[j] != '\\' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
		case i+1 >= len(s):
			return dst // a lone backslash: not from a scanned value
		default:
			switch e := s[i+1]; e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := getu4(s[i:])
				if r < 0 {
					return dst
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, getu4(s[i:])); dec != unicode.ReplacementChar {
						dst = utf8.AppendRune(dst, dec)
						i += 6
						continue
					}
					r = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
			i += 2
		}
	}
	return dst
}

// getu4 decodes a \uXXXX escape at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string, escaped byte for byte as
// encoding/json escapes it with HTML escaping off
// (Encoder.SetEscapeHTML(false)): '"' and '\\' get a backslash, control
// characters become \b, \f, \n, \r, \t or \u00XX, U+2028 and U+2029 become
// \u2028 and \u2029, each byte of invalid UTF-8 becomes \ufffd, and
// everything else is copied as is.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	switch {
	case isASCII(s):
		dst = appendValidString(dst, s, false)
	case utf8.ValidString(s):
		dst = appendValidString(dst, s, true)
	default:
		dst = appendAnyString(dst, s)
	}
	return append(dst, '"')
}

// isASCII reports whether s holds only bytes below 0x80.
func isASCII(s string) bool {
	var acc uint64
	for t := s; len(t) >= 32; t = t[32:] {
		b := t[:32]
		acc |= load64(b, 0) | load64(b, 8) | load64(b, 16) | load64(b, 24)
		if acc&msb != 0 {
			return false
		}
	}
	for i := len(s) &^ 31; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return acc&msb == 0
}

// appendValidString escapes valid UTF-8. It looks for special bytes a word
// at a time (SWAR), storing each word whole and advancing past its plain
// bytes, so dense text (a JSON body, a quote every few bytes) costs no copy
// call per run; once a run has been plain for a while it jumps to the next
// special byte with vectorised strings.IndexByte, remembering where the next
// quote, backslash and 0xE2 are so that no byte is searched twice, and
// copies the run in bulk.
func appendValidString(dst []byte, s string, nonASCII bool) []byte {
	n := len(dst)               // bytes written; buf[n:] is room
	buf := reserve(dst, len(s)) // room for s and escapes, as far as known
	nq, nb, ne := -1, -1, -1    // no '"', '\\', 0xE2 in s[i:nq], s[i:nb], s[i:ne]
	if !nonASCII {
		ne = len(s) // no U+2028 or U+2029 to look for
	}
	plain := 0 // where the current run of plain bytes began
	i := 0
	for i+8 <= len(s) {
		if len(buf)-n < 16 {
			buf = reserve(buf[:n], len(s)-i)
		}
		x := load64(s, i)
		binary.LittleEndian.PutUint64(buf[n:], x)
		m := escMask(x)
		if m == 0 {
			n += 8
			if i += 8; i-plain < 64 {
				continue
			}
			// Each search stops where an earlier one found its byte: only
			// the first special byte matters.
			nq = nextByte(s, i, len(s), nq, '"')
			nb = nextByte(s, i, nq, nb, '\\')
			ne = nextByte(s, i, min(nq, nb), ne, 0xE2)
			end := min(nq, nb, ne)
			if j := indexCtl(s[i:end]); j >= 0 {
				end = i + j
			}
			if len(buf)-n < end-i+16 {
				buf = reserve(buf[:n], len(s)-i)
			}
			n += copy(buf[n:], s[i:end])
			i = end
			continue
		}
		k := bits.TrailingZeros64(m) >> 3
		n += k
		i += k
		switch c := s[i]; {
		case c == 0xE2:
			// U+2028 is E2 80 A8, U+2029 is E2 80 A9.
			if i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8 {
				n += copy(buf[n:], `\u202`)
				buf[n] = hexDigits[s[i+2]&0xF]
				n++
				i += 3
				plain = i
				continue
			}
			buf[n] = c
			n++
			i++
		case c == '"' || c == '\\':
			buf[n], buf[n+1] = '\\', c
			n += 2
			i++
			plain = i
		default:
			n += copy(buf[n:], escapeCtl[c])
			i++
			plain = i
		}
	}
	dst = buf[:n]
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8:
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[s[i+2]&0xF])
			i += 2
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, escapeCtl[c]...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// reserve returns dst's whole capacity as a slice, grown when needed to
// hold n more bytes plus slack for one word store and one escape. Callers
// that know their escapes size dst for them (envelope.Encode does); anyone
// else pays the usual amortised append growth.
func reserve(dst []byte, n int) []byte {
	dst = slices.Grow(dst, n+16)
	return dst[:cap(dst)]
}

// escapeCtl is how encoding/json escapes each control character.
var escapeCtl = func() (t [0x20]string) {
	for c := range t {
		t[c] = string([]byte{'\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF]})
	}
	t['\b'], t['\f'], t['\n'], t['\r'], t['\t'] = `\b`, `\f`, `\n`, `\r`, `\t`
	return t
}()

// nextByte returns the index of the first c in s[i:limit], or limit when
// there is none: either way s[i:result] holds no c. known is an earlier
// answer, reused while it is still ahead.
func nextByte(s string, i, limit, known int, c byte) int {
	if known >= i {
		return known
	}
	if j := strings.IndexByte(s[i:limit], c); j >= 0 {
		return i + j
	}
	return limit
}

// indexCtl returns the index of the first byte below 0x20 in s, or -1. See
// hasCtl for the word test.
func indexCtl(s string) int {
	i := 0
	for t := s; len(t) >= 32; t = t[32:] {
		b := t[:32] // constant offsets below: no bounds checks
		x, y, z, w := load64(b, 0), load64(b, 8), load64(b, 16), load64(b, 24)
		if ((x-lsb*0x20)&^x|(y-lsb*0x20)&^y|(z-lsb*0x20)&^z|(w-lsb*0x20)&^w)&msb != 0 {
			break
		}
		i += 32
	}
	for ; i+8 <= len(s); i += 8 {
		x := load64(s, i)
		if m := (x - lsb*0x20) &^ x & msb; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(s); i++ {
		if s[i] < 0x20 {
			return i
		}
	}
	return -1
}

// escMask flags, in the high bit of each byte, the lowest byte of x (read
// little-endian) that is '"', '\\', below 0x20 or 0xE2; bytes above a
// flagged one may be flagged spuriously, so only the lowest is used.
func escMask(x uint64) uint64 {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	e := x ^ (lsb * 0xE2)
	return ((q-lsb)&^q | (b-lsb)&^b | (e-lsb)&^e | (x-lsb*0x20)&^x) & msb
}

// load64 reads s[i:i+8] little-endian; the compiler makes it one load.
func load64(s string, i int) uint64 {
	t := s[i : i+8]
	return uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
		uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
}

func appendEscapedByte(dst []byte, c byte) []byte {
	if c == '"' || c == '\\' {
		return append(dst, '\\', c)
	}
	return append(dst, escapeCtl[c]...)
}

// appendAnyString is encoding/json's own loop, for strings that hold invalid
// UTF-8.
func appendAnyString(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = appendEscapedByte(dst, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}
