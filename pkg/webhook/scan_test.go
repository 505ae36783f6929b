package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	doc := []byte(` {"id":"evt_1","n":-1.5e+3,"t":true,"f":false,"z":null,
		"data":{"object":{"id":"in_1","customer":{"id":"cus_1"}},"list":[10,{"k":"v"},[1,2]]},
		"esc":"caf\u00e9 \ud83d\ude00 \"q\" \/ \n","\u0069d2":"escaped key","a.b":"dotted"} `)
	tests := []struct {
		path string
		kind Kind
		raw  string
		text string
	}{
		{"id", KindString, `"evt_1"`, "evt_1"},
		{"n", KindNumber, `-1.5e+3`, "-1.5e+3"},
		{"t", KindBool, `true`, "true"},
		{"f", KindBool, `false`, "false"},
		{"z", KindNull, `null`, ""},
		{"data.object.id", KindString, `"in_1"`, "in_1"},
		{"data.object.customer", KindObject, `{"id":"cus_1"}`, `{"id":"cus_1"}`},
		{"data.object.customer.id", KindString, `"cus_1"`, "cus_1"},
		{"data.list.0", KindNumber, `10`, "10"},
		{"data.list.1.k", KindString, `"v"`, "v"},
		{"data.list.2.1", KindNumber, `2`, "2"},
		{"data.list.01.k", KindString, `"v"`, "v"},
		{"data.list.+1.k", KindString, `"v"`, "v"},
		{"data.list.3", KindMissing, ``, ""},
		{"data.list.-1", KindMissing, ``, ""},
		{"data.list.k", KindMissing, ``, ""},
		{"esc", KindString, `"caf\u00e9 \ud83d\ude00 \"q\" \/ \n"`, "café 😀 \"q\" / \n"},
		{"id2", KindString, `"escaped key"`, "escaped key"},
		{"a.b", KindMissing, ``, ""},
		{"id.x", KindMissing, ``, ""},
		{"missing", KindMissing, ``, ""},
		{"id", KindString, `"evt_1"`, "evt_1"}, // the same path twice
	}
	paths := make([]string, len(tests))
	for i, tt := range tests {
		paths[i] = tt.path
	}
	vals, err := Scan(doc, paths...)
	if err != nil {
		t.Fatalf("Scan() = %v", err)
	}
	if len(vals) != len(tests) {
		t.Fatalf("Scan() = %d values, want %d", len(vals), len(tests))
	}
	for i, tt := range tests {
		v := vals[i]
		if v.Kind != tt.kind || string(v.Raw) != tt.raw || v.Text() != tt.text {
			t.Errorf("Scan(%q) = %v %q text %q; want %v %q text %q", tt.path, v.Kind, v.Raw, v.Text(), tt.kind, tt.raw, tt.text)
		}
	}
	root, err := Scan(doc, "")
	if err != nil || root[0].Kind != KindObject || string(root[0].Raw) != string(bytes.TrimSpace(doc)) {
		t.Errorf(`Scan(doc, "") = %v, %v; want the whole document`, root, err)
	}
}

func TestScanRepeatedKeys(t *testing.T) {
	tests := []struct {
		name, doc, path string
		kind            Kind
		raw             string
	}{
		{"last scalar wins", `{"id":"a","id":"b"}`, "id", KindString, `"b"`},
		{"null replaces", `{"id":"a","id":null}`, "id", KindNull, `null`},
		{"later object replaces earlier members", `{"a":{"b":1},"a":{"c":2}}`, "a.b", KindMissing, ``},
		{"later object keeps its own", `{"a":{"b":1},"a":{"c":2}}`, "a.c", KindNumber, `2`},
		{"scalar replaces object", `{"a":{"b":1},"a":5}`, "a.b", KindMissing, ``},
		{"escaped duplicate", `{"id":"a","\u0069d":"b"}`, "id", KindString, `"b"`},
		{"array replaced", `{"a":[1,2],"a":[3]}`, "a.1", KindMissing, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals, err := Scan([]byte(tt.doc), tt.path)
			if err != nil || vals[0].Kind != tt.kind || string(vals[0].Raw) != tt.raw {
				t.Errorf("Scan(%s, %q) = %v %q, %v; want %v %q", tt.doc, tt.path, vals[0].Kind, vals[0].Raw, err, tt.kind, tt.raw)
			}
		})
	}
}

func TestScanStrings(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name, raw, want string
	}{
		{"plain", `"abc"`, "abc"},
		{"long", `"` + long + `"`, long},
		{"long with escapes", `"` + long + `\"` + long + `\u00e9\\"`, long + `"` + long + "é\\"},
		{"escaped quote ends the short run", `"` + strings.Repeat("a", 30) + `\"` + long + `"`, strings.Repeat("a", 30) + `"` + long},
		{"surrogate pair", `"\ud83d\ude00"`, "😀"},
		{"lone high surrogate", `"\ud83d"`, "\uFFFD"},
		{"lone low surrogate", `"\ude00x"`, "\uFFFDx"},
		{"high then non-surrogate", `"\ud83d\u0041"`, "\uFFFDA"},
		{"two highs", `"\ud83d\ud83d\ude00"`, "\uFFFD😀"},
		{"invalid utf-8", "\"a\xffb\"", "a\uFFFDb"},
		{"utf-8 encoded surrogate", "\"\xed\xa0\x80\"", "\uFFFD\uFFFD\uFFFD"},
		{"literal U+FFFD", "\"\uFFFD\"", "\uFFFD"},
		{"nul escape", `"\u0000"`, "\x00"},
		{"all short escapes", `"\b\f\n\r\t\/\\\""`, "\b\f\n\r\t/\\\""},
		{"DEL is plain", "\"\x7f\"", "\x7f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals, err := Scan([]byte(tt.raw), "")
			if err != nil {
				t.Fatalf("Scan(%q) = %v", tt.raw, err)
			}
			var want string
			if err := json.Unmarshal([]byte(tt.raw), &want); err != nil || want != tt.want {
				t.Fatalf("test case disagrees with encoding/json: %q, %v", want, err)
			}
			if got := vals[0].Text(); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestScanMatchesDecodedKeys(t *testing.T) {
	doc := []byte("{\"caf\xe9\":1,\"\\ud83d\":2,\"x\\ny\":3}")
	vals, err := Scan(doc, "caf\uFFFD", "\uFFFD", "x\ny")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"1", "2", "3"} {
		if vals[i].Text() != want {
			t.Errorf("value %d = %q, want %q", i, vals[i].Text(), want)
		}
	}
}

func TestScanRejects(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	tests := []string{
		``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `[1,]`, `[,1]`, `{"a":1 "b":2}`, `{a:1}`, `{'a':1}`,
		`{"a":1}x`, `{"a":1}}`, `1 2`, `"a" "b"`, `[1]]`,
		`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x1`, `NaN`, `Infinity`, `-01`, `1.e5`,
		`tru`, `truex`, `nul`, `nulll`, `True`, `fals`,
		`"abc`, `"a\"`, `"\x"`, `"\u12"`, `"\u12g4"`, `"\'"`, "\"a\x01b\"", "\"a\tb\"", "\"" + strings.Repeat("x", 100) + "\x1f\"",
		"\"" + strings.Repeat("x", 100) + "\\", "\"" + strings.Repeat("x", 100) + "\\u00",
		deep,
		"\xef\xbb\xbf{}", // a byte order mark
	}
	for _, doc := range tests {
		if json.Valid([]byte(doc)) {
			t.Fatalf("test case %q is valid JSON", doc)
		}
		vals, err := Scan([]byte(doc), "a", "")
		if !errors.Is(err, ErrMalformed) || len(vals) != 0 {
			t.Errorf("Scan(%.40q) = %v, %v; want ErrMalformed", doc, vals, err)
		}
	}
}

func TestScanAccepts(t *testing.T) {
	deep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	deepObj := strings.Repeat(`{"a":`, maxDepth) + "1" + strings.Repeat("}", maxDepth)
	for _, doc := range []string{`0`, `-0`, `-0.0e-0`, `1E+10`, `""`, `[]`, `{}`, " \t\r\n[ ] \n", `"\u00e9\uD83D\uDE00"`, "\"\xff\"", "\"\x7f\"", deep, deepObj} {
		if !json.Valid([]byte(doc)) {
			t.Fatalf("test case %.40q is not valid JSON", doc)
		}
		if err := ValidJSON([]byte(doc)); err != nil {
			t.Errorf("ValidJSON(%.40q) = %v", doc, err)
		}
	}
}

func TestPathsScanAppends(t *testing.T) {
	p := NewPaths("a", "b")
	var buf [4]Value
	dst := append(buf[:0], Value{Kind: KindNull})
	got, err := p.Scan([]byte(`{"b":2}`), dst)
	if err != nil || len(got) != 3 || got[0].Kind != KindNull || got[1].Kind != KindMissing || string(got[2].Raw) != "2" {
		t.Fatalf("Scan() = %v, %v", got, err)
	}
	if &got[0] != &buf[0] {
		t.Error("Scan() reallocated a destination with room")
	}
	got, err = p.Scan([]byte(`{`), dst)
	if err == nil || len(got) != 1 {
		t.Errorf("Scan(bad) = %v, %v; want dst unchanged and an error", got, err)
	}
	if p.Len() != 2 {
		t.Errorf("Len() = %d, want 2", p.Len())
	}
}

func TestScanAllocs(t *testing.T) {
	p := NewPaths("id", "data.object.id", "data.object.customer", "list.1")
	doc := []byte(`{"pad":"` + strings.Repeat("x", 4000) + `","id":"evt_1","data":{"object":{"id":"in_1","customer":"cus_1"}},"list":[1,2]}`)
	var buf [4]Value
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := p.Scan(doc, buf[:0]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Paths.Scan allocates %v times per call, want 0", allocs)
	}
}

func TestElements(t *testing.T) {
	vals, err := Scan([]byte(`{"a":[ 1 , "x", {"k":[2]}, [], null ],"e":[],"o":{}}`), "a", "e", "o")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for el := range vals[0].Elements() {
		got = append(got, el.Kind.String()+":"+string(el.Raw))
	}
	want := []string{`number:1`, `string:"x"`, `object:{"k":[2]}`, `array:[]`, `null:null`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Elements() = %q, want %q", got, want)
	}
	for _, v := range vals[1:] {
		for el := range v.Elements() {
			t.Errorf("Elements() of %s yielded %v", v.Raw, el)
		}
	}
	for el := range vals[0].Elements() {
		if el.Kind != KindNumber {
			t.Errorf("first element = %v", el)
		}
		break
	}
}

func TestAppendCompact(t *testing.T) {
	raw := " { \"a\" : [ 1 , \"x y\\\" \" ] ,\n\"b\":\t{ } } "
	vals, err := Scan([]byte(raw), "")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":[1,"x y\" "],"b":{}}`
	if got := string(vals[0].AppendCompact([]byte("<"))); got != "<"+want {
		t.Errorf("AppendCompact() = %q, want %q", got, "<"+want)
	}
	if got := string((Value{}).AppendCompact(nil)); got != "" {
		t.Errorf("AppendCompact(missing) = %q", got)
	}
}

func TestAppendJSONString(t *testing.T) {
	tests := []string{
		"", "plain", "quote \" backslash \\ slash /", "\x00\x01\b\f\n\r\t\x1f\x7f",
		"<html> & </html>", "café 😀", "line\u2028para\u2029", "\xe2\x80\x99 curly", "\xe2\x80",
		"bad \xff utf8", "bad \xff with \u2028 and \"", "\xed\xa0\x80",
		strings.Repeat("x", 200) + "\"" + strings.Repeat("y", 200) + "\\" + strings.Repeat("z", 100) + "\n",
		strings.Repeat("long run ", 50) + "\u2028" + strings.Repeat("é", 40) + "\x01",
		strings.Repeat("\u2029", 30), strings.Repeat(`{"k":"v"},`, 40),
	}
	for _, s := range tests {
		if got, want := string(AppendJSONString(nil, s)), encodeJSONString(t, s); got != want {
			t.Errorf("AppendJSONString(%.60q) = %.80q, want %.80q", s, got, want)
		}
	}
}

// encodeJSONString is what the envelope's encoder used to produce.
func encodeJSONString(t testing.TB, s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("plain")
	f.Add("\"\\\x00\u2028\u2029\xe2\x80\xa8\xe2\x80")
	f.Add("bad \xff\xfe utf8 \u2028")
	f.Add(strings.Repeat("a", 70) + "\x1f" + strings.Repeat("b", 70) + "\xe2\x80\xa9")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendJSONString(nil, s)), encodeJSONString(t, s); got != want {
			t.Fatalf("AppendJSONString(%q) = %q, want %q", s, got, want)
		}
	})
}

// FuzzScan holds Scan to encoding/json: the same validity verdict as
// json.Valid and, for valid documents, at every path the value that decoding
// into any (with UseNumber) and walking finds, with Text equal to Field.
func FuzzScan(f *testing.F) {
	for _, seed := range []string{
		`{"id":"evt_1","data":{"object":{"id":"in_1","customer":{"id":"cus_1"}}}}`,
		`{"a":{"b":1},"a":{"c":[1,{"d":null}]}}`,
		`[{"x":"\ud83d\ude00"},{"x":"\ud83d"},"\u00e9",1e5,-0.5,true,false,null]`,
		"{\"k\xff\":\"v\xfe\",\"\\u0041\":\"\\/\"}",
		`{"entry":[{"id":"W1","changes":[{"field":"messages","value":{"messages":[{"id":"m"}]}}]}]}`,
		`{"pad":"` + strings.Repeat("x", 80) + `\"` + strings.Repeat("y", 40) + `","0":{"00":[0,1]}}`,
		`{"a":1}x`, `[1,]`, "\"\x01\"", `{"a":01}`, ` `, `"\u12"`,
	} {
		f.Add([]byte(seed), "id|0|a.b|0.x|entry.0.changes.0.value|a.c.1.d")
	}
	f.Fuzz(func(t *testing.T, doc []byte, extra string) {
		paths := strings.Split(extra, "|")
		if len(paths) > 16 {
			paths = paths[:16]
		}
		var root any
		valid := json.Valid(doc)
		if valid {
			dec := json.NewDecoder(bytes.NewReader(doc))
			dec.UseNumber()
			if err := dec.Decode(&root); err != nil {
				t.Fatalf("json.Valid but Decode = %v", err)
			}
			paths = append(paths, docPaths(root, "", 64)...)
		}
		vals, err := Scan(doc, paths...)
		if (err == nil) != valid {
			t.Fatalf("Scan(%q) error = %v, json.Valid = %v", doc, err, valid)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Scan error %v does not wrap ErrMalformed", err)
			}
			return
		}
		for i, p := range paths {
			checkValue(t, root, p, vals[i])
		}
	})
}

// docPaths lists up to limit paths of nodes in a decoded document.
func docPaths(node any, prefix string, limit int) []string {
	var out []string
	var walk func(node any, prefix string)
	walk = func(node any, prefix string) {
		join := func(seg string) string {
			if prefix == "" {
				return seg
			}
			return prefix + "." + seg
		}
		switch n := node.(type) {
		case map[string]any:
			for k, v := range n {
				if len(out) >= limit || strings.Contains(k, ".") || (prefix == "" && k == "") {
					continue
				}
				out = append(out, join(k))
				walk(v, join(k))
			}
		case []any:
			for i, v := range n {
				if len(out) >= limit {
					return
				}
				out = append(out, join(strconv.Itoa(i)))
				walk(v, join(strconv.Itoa(i)))
			}
		}
	}
	walk(node, prefix)
	return out
}

// lookup walks a decoded document the way Field does.
func lookup(doc any, path string) (any, bool) {
	v := doc
	if path == "" {
		return v, true
	}
	for _, part := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[part]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			v = node[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func checkValue(t *testing.T, root any, path string, got Value) {
	t.Helper()
	want, ok := lookup(root, path)
	field, fieldOK := Field(root, path)
	if got.Text() != field || fieldOK != (got.Kind != KindMissing && got.Kind != KindNull) {
		t.Fatalf("path %q: Text() = %q (kind %v), Field = %q, %v", path, got.Text(), got.Kind, field, fieldOK)
	}
	if !ok {
		if got.Kind != KindMissing {
			t.Fatalf("path %q: got %v %q, want missing", path, got.Kind, got.Raw)
		}
		return
	}
	var kind Kind
	switch want.(type) {
	case nil:
		kind = KindNull
	case bool:
		kind = KindBool
	case json.Number:
		kind = KindNumber
	case string:
		kind = KindString
	case map[string]any:
		kind = KindObject
	case []any:
		kind = KindArray
	}
	if got.Kind != kind {
		t.Fatalf("path %q: kind %v, want %v", path, got.Kind, kind)
	}
	dec := json.NewDecoder(bytes.NewReader(got.Raw))
	dec.UseNumber()
	var decoded any
	if err := dec.Decode(&decoded); err != nil || !reflect.DeepEqual(decoded, want) {
		t.Fatalf("path %q: raw %q decodes to %v (%v), want %v", path, got.Raw, decoded, err, want)
	}
	if kind == KindObject || kind == KindArray {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(json.RawMessage(got.Raw)); err != nil {
			t.Fatal(err)
		}
		if c := got.AppendCompact(nil); string(c)+"\n" != buf.String() {
			t.Fatalf("path %q: AppendCompact = %q, encoding/json %q", path, c, buf.String())
		}
	}
	if arr, isArr := want.([]any); isArr {
		// Paths.Elements extracts what scanning each element would.
		sub := NewPaths("", "0", "id", "a.b", "1.x")
		n := 0
		for el, vals := range sub.Elements(got, make([]Value, 0, 1)) {
			want, err := sub.Scan(el.Raw, nil)
			if err != nil || !reflect.DeepEqual(vals, want) || el.Kind != want[0].Kind {
				t.Fatalf("path %q: Elements yields %v %v, Scan of %q gives %v, %v", path, el, vals, el.Raw, want, err)
			}
			n++
		}
		if n != len(arr) {
			t.Fatalf("path %q: Paths.Elements yields %d, want %d", path, n, len(arr))
		}
		i := 0
		for el := range got.Elements() {
			if i >= len(arr) {
				t.Fatalf("path %q: Elements yields more than %d", path, len(arr))
			}
			checkValue(t, arr[i], "", el)
			i++
		}
		if i != len(arr) {
			t.Fatalf("path %q: Elements yields %d, want %d", path, i, len(arr))
		}
	}
}
