package webhook

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestIdempotencyKey(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"provider id", Event{ID: "evt_1", Body: []byte("x")}, "t#stripe#evt_1"},
		{"hash of body", Event{Body: []byte("hello")}, "t#stripe#sha256:" + hashFields([][]byte{[]byte("hello")})},
		{"hash of defining fields", Event{Body: []byte("x"), Defining: [][]byte{[]byte("a"), []byte("b")}}, "t#stripe#sha256:" + hashFields([][]byte{[]byte("a"), []byte("b")})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IdempotencyKey("t", "stripe", tt.ev); got != tt.want {
				t.Errorf("IdempotencyKey() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefiningFieldBoundariesDoNotCollide(t *testing.T) {
	a := EventID(Event{Defining: [][]byte{[]byte("ab"), []byte("c")}})
	b := EventID(Event{Defining: [][]byte{[]byte("a"), []byte("bc")}})
	if a == b {
		t.Errorf("EventID collides for shifted field boundaries: %s", a)
	}
}

func TestGroupID(t *testing.T) {
	long := strings.Repeat("x", 129)
	tests := []struct {
		name, conv, fallback string
		wantHashed           bool
		want                 string
	}{
		{"readable", "acme/repo#12", "k", false, "acme/repo#12"},
		{"empty uses fallback", "", "t#p#id", false, "t#p#id"},
		{"space hashed", "a b", "k", true, ""},
		{"unicode hashed", "café", "k", true, ""},
		{"too long hashed", long, "k", true, ""},
		{"exactly 128 kept", long[:128], "k", false, long[:128]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GroupID(tt.conv, tt.fallback)
			if len(got) > 128 || !validSQSID(got) {
				t.Fatalf("GroupID(%q) = %q, not a valid SQS id", tt.conv, got)
			}
			if tt.wantHashed != strings.HasPrefix(got, "h:") {
				t.Errorf("GroupID(%q) = %q, hashed want %v", tt.conv, got, tt.wantHashed)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("GroupID(%q) = %q, want %q", tt.conv, got, tt.want)
			}
		})
	}
	if GroupID("a b", "") != GroupID("a b", "") {
		t.Error("GroupID is not deterministic")
	}
}

func TestMatchAny(t *testing.T) {
	want := []byte("abc")
	tests := []struct {
		name  string
		cands [][]byte
		ok    bool
	}{
		{"none", nil, false},
		{"first", [][]byte{[]byte("abc"), []byte("x")}, true},
		{"last", [][]byte{[]byte("x"), []byte("abc")}, true},
		{"no match", [][]byte{[]byte("abd"), []byte("ab")}, false},
		{"two matches", [][]byte{[]byte("abc"), []byte("abc")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchAny(want, tt.cands); got != tt.ok {
				t.Errorf("MatchAny(%q) = %v, want %v", tt.cands, got, tt.ok)
			}
		})
	}
}

func TestCheckTimestamp(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name string
		raw  string
		want error
	}{
		{"now", "1700000000", nil},
		{"edge past", "1699999700", nil},
		{"too old", "1699999699", ErrStale},
		{"too new", "1700000301", ErrStale},
		{"garbage", "abc", ErrMissingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CheckTimestamp(tt.raw, now, 300*time.Second)
			if !errors.Is(err, tt.want) && !(err == nil && tt.want == nil) {
				t.Errorf("CheckTimestamp(%q) = %v, want %v", tt.raw, err, tt.want)
			}
		})
	}
}

func TestField(t *testing.T) {
	doc, err := DecodeJSON([]byte(`{"a":{"b":[{"c":"x"},{"n":12345678901234567890}]},"t":true,"z":null}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want string
		ok   bool
	}{
		{"a.b.0.c", "x", true},
		{"a.b.1.n", "12345678901234567890", true},
		{"t", "true", true},
		{"z", "", false},
		{"a.b.2", "", false},
		{"a.x", "", false},
		{"a.b.0", `{"c":"x"}`, true},
	}
	for _, tt := range tests {
		got, ok := Field(doc, tt.path)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Field(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
	if _, err := DecodeJSON([]byte("{")); !errors.Is(err, ErrMalformed) {
		t.Errorf("DecodeJSON(bad) = %v, want ErrMalformed", err)
	}
}
