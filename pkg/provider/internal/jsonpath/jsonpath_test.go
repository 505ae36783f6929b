package jsonpath

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/webhook"
)

func TestField(t *testing.T) {
	doc, err := Decode([]byte(`{"a":{"b":[{"c":"x"},{"n":12345678901234567890}]},"t":true,"z":null,"h":{"y":"<",  "x":1}}`))
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
		{"a.b.-1", "", false},
		{"a.b.x", "", false},
		{"a.x", "", false},
		{"t.x", "", false},
		{"a.b.0", `{"c":"x"}`, true},
		{"h", `{"x":1,"y":"\u003c"}`, true},
		{"", `{"a":{"b":[{"c":"x"},{"n":12345678901234567890}]},"h":{"x":1,"y":"\u003c"},"t":true,"z":null}`, true},
		{"a.b.*.c", `["x"]`, true},
		{"a.b.*.n", `[12345678901234567890]`, true},
		{"a.b.*", `[{"c":"x"},{"n":12345678901234567890}]`, true},
		{"a.b.*.q", `[]`, true},
		{"h.*", "", false},
	}
	for _, tt := range tests {
		got, ok := Field(doc, tt.path)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Field(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
		if Text(doc, tt.path) != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.path, Text(doc, tt.path), tt.want)
		}
	}
}

// TestDecodeStrict: exactly one JSON value, surrounding white space allowed.
func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		body string
		ok   bool
	}{
		{`{}`, true},
		{" \t\r\n[1] \n", true},
		{`"x"`, true},
		{`null`, true},
		{`{} x`, false},
		{`{}{}`, false},
		{`{"a":1}}`, false},
		{`1 2`, false},
		{`{`, false},
		{``, false},
		{`nope`, false},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.body))
		if tt.ok && err != nil || !tt.ok && !errors.Is(err, webhook.ErrMalformed) {
			t.Errorf("Decode(%q) = %v, want ok %v", tt.body, err, tt.ok)
		}
	}
}

func TestRequired(t *testing.T) {
	doc, err := Object([]byte(`{"id":"ev_1","n":7,"obj":{"id":"x"},"empty":""}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, want, err string
	}{
		{"id", "ev_1", ""},
		{"n", "7", ""},
		{"obj", "", "event has no obj"},
		{"empty", "", "event has no empty"},
		{"missing", "", "event has no missing"},
	} {
		got, err := Required(doc, "event", tt.path)
		if got != tt.want || (tt.err == "") != (err == nil) ||
			err != nil && (!errors.Is(err, webhook.ErrMalformed) || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Required(%q) = %q, %v; want %q, %q", tt.path, got, err, tt.want, tt.err)
		}
	}
}
