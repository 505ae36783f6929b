package webhook

import (
	"bytes"
	"encoding/binary"
	"iter"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The kinds of JSON values. KindMissing is the zero Kind: the path is not in
// the document.
const (
	KindMissing Kind = iota
	KindNull
	KindBool
	KindNumber
	KindString
	KindObject
	KindArray
)

var kindNames = [...]string{"missing", "null", "bool", "number", "string", "object", "array"}

// String returns the kind's name: "missing", "null", "bool", "number",
// "string", "object" or "array".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one value found by a scan: its kind and its raw JSON text, a
// sub-slice of the scanned document (nothing is copied, so it is valid as
// long as the document is). The zero Value is a missing one.
type Value struct {
	Kind Kind
	Raw  []byte
}

// maxDepth is encoding/json's nesting limit: json.Valid rejects a document
// with more than 10000 open arrays and objects, and so does Scan.
const maxDepth = 10000

// Paths is a compiled set of dotted paths that Scan extracts from a JSON
// document in one pass. A path is a dot-separated list of segments, read like
// Field reads them: a segment selects the object member with exactly that key
// (compared after unescaping, case-sensitive) or, when strconv.Atoi reads it
// as a non-negative integer, that element of an array; "entry.0.id" is the
// "id" of the first element of "entry". The empty path is the whole document.
//
// When an object repeats a key, the last occurrence wins, including
// everything below it, as when encoding/json decodes into a map.
//
// Compile Paths once (a package-level variable) and share them: they are
// immutable and safe for concurrent use.
type Paths struct {
	n     int        // number of paths
	nodes []pathNode // nodes[0] is the root
	// nextTarget chains the paths that end at the same node.
	nextTarget []int32
}

type pathNode struct {
	key   string // the segment, a substring of its path
	index int    // the segment as an array index, or -1
	// first child, next sibling and first path ending here; -1 for none.
	child, sibling, target int32
	// indexed reports whether some child is an array index.
	indexed bool
}

// NewPaths compiles paths. Any string is a valid path.
func NewPaths(paths ...string) *Paths {
	p := &Paths{n: len(paths), nextTarget: make([]int32, len(paths))}
	n := 1
	for _, path := range paths {
		if path != "" {
			n += strings.Count(path, ".") + 1
		}
	}
	p.nodes = make([]pathNode, 1, n)
	p.nodes[0] = pathNode{index: -1, child: -1, sibling: -1, target: -1}
	for i, path := range paths {
		cur := int32(0)
		if path != "" {
			for seg := range strings.SplitSeq(path, ".") {
				cur = p.childOf(cur, seg)
			}
		}
		// Append to the node's chain so results keep path order.
		p.nextTarget[i] = -1
		if t := p.nodes[cur].target; t < 0 {
			p.nodes[cur].target = int32(i)
		} else {
			for p.nextTarget[t] >= 0 {
				t = p.nextTarget[t]
			}
			p.nextTarget[t] = int32(i)
		}
	}
	return p
}

// childOf returns the child of parent for seg, creating it.
func (p *Paths) childOf(parent int32, seg string) int32 {
	last := int32(-1)
	for c := p.nodes[parent].child; c >= 0; c = p.nodes[c].sibling {
		if p.nodes[c].key == seg {
			return c
		}
		last = c
	}
	idx := -1
	if n, err := strconv.Atoi(seg); err == nil && n >= 0 {
		idx = n
		p.nodes[parent].indexed = true
	}
	p.nodes = append(p.nodes, pathNode{key: seg, index: idx, child: -1, sibling: -1, target: -1})
	c := int32(len(p.nodes) - 1)
	if last < 0 {
		p.nodes[parent].child = c
	} else {
		p.nodes[last].sibling = c
	}
	return c
}

// Len returns the number of paths.
func (p *Paths) Len() int { return p.n }

// Scan validates doc as one JSON value (surrounded by optional whitespace)
// and appends to dst one Value per path, in the order the paths were given:
// KindMissing when the document does not hold the path. It validates exactly
// what json.Valid accepts, including strings holding invalid UTF-8 (which
// decoding turns into U+FFFD, as Value.Text does) and nesting up to 10000
// levels, and rejects anything after the value.
//
// On error it returns dst unchanged and a *SyntaxError, which wraps
// ErrMalformed.
func (p *Paths) Scan(doc []byte, dst []Value) ([]Value, error) {
	base := len(dst)
	n := 0
	if p != nil {
		n = p.n
	}
	if cap(dst)-base < n {
		grown := make([]Value, base, base+n)
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:base+n]
	out := dst[base:]
	clear(out)
	s := scanner{data: doc, out: out}
	root := int32(-1)
	if p != nil && n > 0 {
		s.p, root = p, 0
	}
	i := s.ws(0)
	i, err := s.value(i, root)
	if err == nil {
		if i = s.ws(i); i < len(doc) {
			err = s.fail(i, "unexpected data after the value")
		}
	}
	if err != nil {
		clear(out)
		return dst[:base], err
	}
	return dst, nil
}

// Scan extracts paths from doc in one pass; see Paths. Compiling the paths
// costs a few allocations per call, so hot code compiles them once with
// NewPaths.
func Scan(doc []byte, paths ...string) ([]Value, error) {
	return NewPaths(paths...).Scan(doc, nil)
}

// Elements returns an iterator over the elements of an array value (from a
// scanned document) that also extracts p's paths from each element, in the
// same pass: what Value.Elements followed by Scan of each element yields,
// reading every byte once instead of twice. The values it yields live in
// dst's storage, reused from one element to the next. It yields nothing for
// other kinds.
func (p *Paths) Elements(arr Value, dst []Value) iter.Seq2[Value, []Value] {
	return func(yield func(Value, []Value) bool) {
		if arr.Kind != KindArray {
			return
		}
		n := 0
		if p != nil {
			n = p.n
		}
		if cap(dst) < n {
			dst = make([]Value, n)
		}
		out := dst[:n]
		s := scanner{data: arr.Raw, out: out}
		root := int32(-1)
		if n > 0 {
			s.p, root = p, 0
		}
		d := arr.Raw
		for i := s.ws(1); i < len(d) && d[i] != ']'; {
			clear(out)
			end, err := s.value(i, root)
			if err != nil || !yield(Value{Kind: kindAt(d[i]), Raw: d[i:end]}, out) {
				return
			}
			if i = s.ws(end); i < len(d) && d[i] == ',' {
				i = s.ws(i + 1)
			}
		}
	}
}

// kindAt returns the kind of the value whose first byte is c.
func kindAt(c byte) Kind {
	switch c {
	case '{':
		return KindObject
	case '[':
		return KindArray
	case '"':
		return KindString
	case 't', 'f':
		return KindBool
	case 'n':
		return KindNull
	}
	return KindNumber
}

// ValidJSON reports whether doc is one JSON value, as json.Valid does: nil,
// or a *SyntaxError saying where it is not.
func ValidJSON(doc []byte) error {
	_, err := (*Paths)(nil).Scan(doc, nil)
	return err
}

// scanner is a validating recursive-descent pass over one document. Values
// under a path node are recorded; everything else is only validated.
type scanner struct {
	data  []byte
	p     *Paths
	out   []Value
	depth int
}

func (s *scanner) fail(off int, what string) error {
	return &SyntaxError{Offset: off, msg: what}
}

// SyntaxError reports where and why a document is not JSON. It wraps
// ErrMalformed and never quotes the document.
type SyntaxError struct {
	Offset int // byte offset of the problem
	msg    string
}

func (e *SyntaxError) Error() string {
	return "invalid JSON at offset " + strconv.Itoa(e.Offset) + ": " + e.msg
}

// Unwrap returns ErrMalformed.
func (e *SyntaxError) Unwrap() error { return ErrMalformed }

// ws returns the index of the first non-whitespace byte at or after i.
func (s *scanner) ws(i int) int {
	d := s.data
	for i < len(d) {
		if c := d[i]; c > ' ' || wsMask>>c&1 == 0 {
			return i
		}
		i++
	}
	return i
}

// wsMask has bit c set for each JSON whitespace byte c.
const wsMask uint64 = 1<<' ' | 1<<'\t' | 1<<'\n' | 1<<'\r'

// value scans the value starting at i (not whitespace) and returns the index
// after it. node is the path node the value sits at, or -1.
func (s *scanner) value(i int, node int32) (int, error) {
	d := s.data
	if i >= len(d) {
		return i, s.fail(i, "unexpected end of input")
	}
	if node < 0 {
		switch d[i] {
		case '{':
			return s.object(i, -1)
		case '[':
			return s.array(i, -1)
		}
		_, end, err := s.scalar(i)
		return end, err
	}
	s.reset(node) // a repeated key replaces what an earlier one yielded
	start := i
	var (
		kind Kind
		end  int
		err  error
	)
	switch d[i] {
	case '{':
		kind = KindObject
		end, err = s.object(i, node)
	case '[':
		kind = KindArray
		end, err = s.array(i, node)
	default:
		kind, end, err = s.scalar(i)
	}
	if err != nil {
		return end, err
	}
	for t := s.p.nodes[node].target; t >= 0; t = s.p.nextTarget[t] {
		s.out[t] = Value{Kind: kind, Raw: d[start:end]}
	}
	return end, nil
}

// reset clears the results at and below node.
func (s *scanner) reset(node int32) {
	n := &s.p.nodes[node]
	for t := n.target; t >= 0; t = s.p.nextTarget[t] {
		s.out[t] = Value{}
	}
	for c := n.child; c >= 0; c = s.p.nodes[c].sibling {
		s.reset(c)
	}
}

// scalar scans a string, number or literal at i.
func (s *scanner) scalar(i int) (Kind, int, error) {
	d := s.data
	switch c := d[i]; {
	case c == '"':
		end, _, err := s.str(i + 1)
		return KindString, end, err
	case c == '-' || '0' <= c && c <= '9':
		end, err := s.number(i)
		return KindNumber, end, err
	case c == 't':
		if bytes.HasPrefix(d[i:], []byte("true")) {
			return KindBool, i + 4, nil
		}
	case c == 'f':
		if bytes.HasPrefix(d[i:], []byte("false")) {
			return KindBool, i + 5, nil
		}
	case c == 'n':
		if bytes.HasPrefix(d[i:], []byte("null")) {
			return KindNull, i + 4, nil
		}
	}
	return KindMissing, i, s.fail(i, "unexpected character")
}

func (s *scanner) number(i int) (int, error) {
	d := s.data
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		i = digits(d, i+1)
	default:
		return i, s.fail(i, "invalid number")
	}
	if i < len(d) && d[i] == '.' {
		j := digits(d, i+1)
		if j == i+1 {
			return j, s.fail(j, "invalid number")
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := digits(d, i)
		if j == i {
			return j, s.fail(j, "invalid number")
		}
		i = j
	}
	return i, nil
}

func digits(d []byte, i int) int {
	for i < len(d) && '0' <= d[i] && d[i] <= '9' {
		i++
	}
	return i
}

func (s *scanner) object(i int, node int32) (int, error) {
	if s.depth++; s.depth > maxDepth {
		return i, s.fail(i, "nesting too deep")
	}
	d := s.data
	i = s.ws(i + 1)
	if i < len(d) && d[i] == '}' {
		s.depth--
		return i + 1, nil
	}
	first := int32(-1)
	if node >= 0 {
		first = s.p.nodes[node].child
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return i, s.fail(i, "expected a string key")
		}
		end, esc, err := s.str(i + 1)
		if err != nil {
			return end, err
		}
		child := int32(-1)
		if first >= 0 {
			child = s.match(first, d[i+1:end-1], esc)
		}
		i = s.ws(end)
		if i >= len(d) || d[i] != ':' {
			return i, s.fail(i, "expected ':' after a key")
		}
		if i, err = s.value(s.ws(i+1), child); err != nil {
			return i, err
		}
		i = s.ws(i)
		if i < len(d) {
			switch d[i] {
			case ',':
				i = s.ws(i + 1)
				continue
			case '}':
				s.depth--
				return i + 1, nil
			}
		}
		return i, s.fail(i, "expected ',' or '}' in an object")
	}
}

// match returns the child among first and its siblings whose segment equals
// the key whose raw (still escaped) text is raw, or -1.
func (s *scanner) match(first int32, raw []byte, esc bool) int32 {
	key := raw
	if esc || !utf8.Valid(raw) {
		var buf [64]byte
		key = appendUnquote(buf[:0], raw)
	}
	for c := first; c >= 0; c = s.p.nodes[c].sibling {
		if s.p.nodes[c].key == string(key) {
			return c
		}
	}
	return -1
}

func (s *scanner) array(i int, node int32) (int, error) {
	if s.depth++; s.depth > maxDepth {
		return i, s.fail(i, "nesting too deep")
	}
	d := s.data
	i = s.ws(i + 1)
	if i < len(d) && d[i] == ']' {
		s.depth--
		return i + 1, nil
	}
	indexed := node >= 0 && s.p.nodes[node].indexed
	for k := 0; ; k++ {
		var err error
		if !indexed {
			if i, err = s.value(i, -1); err != nil {
				return i, err
			}
		} else {
			start, child := i, s.indexChild(node, k, -1)
			if i, err = s.value(i, child); err != nil {
				return i, err
			}
			// Segments such as "0" and "00" name the same element: give
			// the others their own pass over it.
			for c := s.indexChild(node, k, child); child >= 0 && c >= 0; c = s.indexChild(node, k, c) {
				sub := scanner{data: d[start:i], p: s.p, out: s.out, depth: s.depth}
				if _, err := sub.value(0, c); err != nil {
					return i, err
				}
			}
		}
		i = s.ws(i)
		if i < len(d) {
			switch d[i] {
			case ',':
				i = s.ws(i + 1)
				continue
			case ']':
				s.depth--
				return i + 1, nil
			}
		}
		return i, s.fail(i, "expected ',' or ']' in an array")
	}
}

// indexChild returns the first child of node after `after` (or the first
// child when after is -1) whose index is k, or -1.
func (s *scanner) indexChild(node int32, k int, after int32) int32 {
	c := s.p.nodes[node].child
	if after >= 0 {
		c = s.p.nodes[after].sibling
	}
	for ; c >= 0; c = s.p.nodes[c].sibling {
		if s.p.nodes[c].index == k {
			return c
		}
	}
	return -1
}

// str scans the rest of a string whose content starts at i and returns the
// index after its closing quote and whether it holds escapes. It looks a
// word at a time (SWAR) and hands long strings to longStr.
func (s *scanner) str(i int) (int, bool, error) {
	d := s.data
	esc := false
	start := i
	for i+8 <= len(d) {
		m := strMask(binary.LittleEndian.Uint64(d[i:]))
		if m == 0 {
			if i += 8; i-start >= 64 {
				return s.longStr(i, esc)
			}
			continue
		}
		i += bits.TrailingZeros64(m) >> 3
		switch d[i] {
		case '"':
			return i + 1, esc, nil
		case '\\':
			esc = true
			n, err := s.escape(i)
			if err != nil {
				return n, esc, err
			}
			i, start = n, n
		default:
			return i, esc, s.fail(i, "control character in string")
		}
	}
	for i < len(d) {
		switch c := d[i]; {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			n, err := s.escape(i)
			if err != nil {
				return n, esc, err
			}
			i = n
		case c < 0x20:
			return i, esc, s.fail(i, "control character in string")
		default:
			i++
		}
	}
	return i, esc, s.fail(i, "unterminated string")
}

// strMask flags, in the high bit of each byte, the lowest byte of x (read
// little-endian) that is '"', '\\' or below 0x20; see escMask.
func strMask(x uint64) uint64 {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	return ((q-lsb)&^q | (b-lsb)&^b | (x-lsb*0x20)&^x) & msb
}

// longStr scans the rest of a long string with bytes.IndexByte (vectorised)
// for the closing quote and backslashes, and checks the runs between them for
// control characters a word at a time.
func (s *scanner) longStr(i int, esc bool) (int, bool, error) {
	d := s.data
	q := -1 // position of the next '"' at or after i
	for {
		if q < i {
			if q = bytes.IndexByte(d[i:], '"'); q < 0 {
				return len(d), esc, s.fail(len(d), "unterminated string")
			}
			q += i
		}
		b := bytes.IndexByte(d[i:q], '\\')
		if b < 0 {
			if hasCtl(d[i:q]) {
				return i, esc, s.fail(i, "control character in string")
			}
			return q + 1, esc, nil
		}
		b += i
		if hasCtl(d[i:b]) {
			return i, esc, s.fail(i, "control character in string")
		}
		esc = true
		n, err := s.escape(b)
		if err != nil {
			return n, esc, err
		}
		i = n
	}
}

// escape validates the escape sequence at i (a backslash) and returns the
// index after it.
func (s *scanner) escape(i int) (int, error) {
	d := s.data
	if i+1 >= len(d) {
		return i, s.fail(i, "unterminated string")
	}
	switch d[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
		if i+6 <= len(d) && isHex(d[i+2]) && isHex(d[i+3]) && isHex(d[i+4]) && isHex(d[i+5]) {
			return i + 6, nil
		}
	}
	return i, s.fail(i, "invalid escape in string")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasCtl reports whether b holds a byte below 0x20. (x - 0x20…) &^ x sets
// the high bit of the lowest such byte of a word and of no byte below it;
// bytes above only borrow from one that is.
func hasCtl(b []byte) bool {
	for ; len(b) >= 32; b = b[32:] {
		t := b[:32] // constant offsets below: no bounds checks
		x := binary.LittleEndian.Uint64(t[0:])
		y := binary.LittleEndian.Uint64(t[8:])
		z := binary.LittleEndian.Uint64(t[16:])
		w := binary.LittleEndian.Uint64(t[24:])
		if ((x-lsb*0x20)&^x|(y-lsb*0x20)&^y|(z-lsb*0x20)&^z|(w-lsb*0x20)&^w)&msb != 0 {
			return true
		}
	}
	for ; len(b) >= 8; b = b[8:] {
		x := binary.LittleEndian.Uint64(b)
		if (x-lsb*0x20)&^x&msb != 0 {
			return true
		}
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}
