package envelope

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		body     []byte
		encoding string
	}{
		{"json text", []byte(`{"id":"evt_1","name":"caf\u00e9 \ud83d\ude00"}`), "json"},
		{"json with inner whitespace, kept byte for byte", []byte("{\n  \"id\": \"evt_1\",\t\"n\": [1, 2]\n}"), "json"},
		{"json array", []byte(`[{"a":"<&>"}]`), "json"},
		{"json with surrounding whitespace is text", []byte(" {\"id\":1}\n"), ""},
		{"two json values are text", []byte(`{"a":1}{"b":2}`), ""},
		{"utf8 text", []byte("Body=héllo&From=%2B1"), ""},
		{"empty", nil, ""},
		{"binary", []byte{0xff, 0x00, 0xfe}, "base64"},
		{"json-like but not UTF-8", []byte("{\"a\":\"\xff\"}"), "base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Envelope{Version: Version, Key: "t#p#1", Tenant: "t", Provider: "p", EventID: "1", ReceivedAt: time.Unix(1, 0).UTC()}
			e.SetBody(tt.body)
			if e.BodyEncoding != tt.encoding {
				t.Errorf("BodyEncoding = %q, want %q", e.BodyEncoding, tt.encoding)
			}
			b, err := e.Encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode() = %v", err)
			}
			raw, err := got.RawBody()
			if err != nil || !bytes.Equal(raw, tt.body) {
				t.Errorf("RawBody() = %q, %v; want %q", raw, err, tt.body)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct{ name, in string }{
		{"not json", "nope"},
		{"wrong version", `{"v":2,"key":"k","tenant":"t","provider":"p","eventId":"e"}`},
		{"missing key", `{"v":1,"tenant":"t","provider":"p","eventId":"e"}`},
		{"bad encoding", `{"v":1,"key":"k","tenant":"t","provider":"p","eventId":"e","bodyEncoding":"gzip"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decode([]byte(tt.in)); !errors.Is(err, ErrInvalid) {
				t.Errorf("Decode(%q) = %v, want ErrInvalid", tt.in, err)
			}
		})
	}
}

// TestFixture keeps the documented example in testdata decodable, so the
// envelope description in docs/architecture.md cannot drift from the code.
func TestFixture(t *testing.T) {
	b, err := os.ReadFile("testdata/v1.json")
	if err != nil {
		t.Fatal(err)
	}
	e, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(testdata/v1.json) = %v", err)
	}
	if e.Key != "acme#stripe#evt_1NG8Du2eZvKYlo2CUI79vXWy" || e.Conversation != "cus_9s6XKzkNRiz8i3" {
		t.Errorf("fixture decoded to %+v", e)
	}
}

// TestEncode pins the wire format: fields in declared order, optional ones
// left out when empty, headers sorted, HTML characters and U+2028/2029 as
// they are (no HTML escaping), invalid UTF-8 replaced, times in RFC 3339 with
// nanoseconds, no trailing newline.
func TestEncode(t *testing.T) {
	at := time.Date(2026, 11, 22, 17, 0, 0, 123000000, time.UTC)
	tests := []struct {
		name string
		e    Envelope
		want string
	}{
		{"minimal", Envelope{},
			`{"v":0,"key":"","tenant":"","provider":"","eventId":"","conversation":"","receivedAt":"0001-01-01T00:00:00Z","body":""}`},
		{"fixture", Envelope{Version: Version, Key: "acme#stripe#evt_1", Tenant: "acme", Provider: "stripe", EventID: "evt_1", Type: "invoice.paid", Conversation: "cus_1", ReceivedAt: at, Body: `{"id":"evt_1","html":"<a href=\"x\">&amp;</a>"}`, Headers: map[string]string{"content-type": "application/json"}},
			`{"v":1,"key":"acme#stripe#evt_1","tenant":"acme","provider":"stripe","eventId":"evt_1","type":"invoice.paid","conversation":"cus_1","receivedAt":"2026-11-22T17:00:00.123Z","headers":{"content-type":"application/json"},"body":"{\"id\":\"evt_1\",\"html\":\"<a href=\\\"x\\\">&amp;</a>\"}"}`},
		{"raw JSON body", Envelope{Version: Version, Key: "k", ReceivedAt: at, Body: "{\"id\": \"<a>\\n\"}", BodyEncoding: "json"},
			`{"v":1,"key":"k","tenant":"","provider":"","eventId":"","conversation":"","receivedAt":"2026-11-22T17:00:00.123Z","bodyEncoding":"json","body":{"id": "<a>\n"}}`},
		{"binary body", Envelope{Version: Version, Key: "k", ReceivedAt: at, Body: "/w==", BodyEncoding: "base64"},
			`{"v":1,"key":"k","tenant":"","provider":"","eventId":"","conversation":"","receivedAt":"2026-11-22T17:00:00.123Z","bodyEncoding":"base64","body":"/w=="}`},
		{"escapes everywhere", Envelope{Version: -3, Key: "a\"b\\c\n", Tenant: "\x00\x1f", Provider: "caf\xe9", EventID: "\u2028\u2029", Type: "t\tt", Conversation: "\xe2\x80", ReceivedAt: at, Body: "<&>\"\r\n\xe2\x80\x99"},
			`{"v":-3,"key":"a\"b\\c\n","tenant":"\u0000\u001f","provider":"caf\ufffd","eventId":"\u2028\u2029","type":"t\tt","conversation":"\ufffd\ufffd","receivedAt":"2026-11-22T17:00:00.123Z","body":"<&>\"\r\n’"}`},
		{"many headers", Envelope{Headers: map[string]string{"b": "2", "a": "1", "c\"": "3\n", "": "", "é": "\xff", "z": "", "y": "x", "x": "y"}},
			`{"v":0,"key":"","tenant":"","provider":"","eventId":"","conversation":"","receivedAt":"0001-01-01T00:00:00Z","headers":{"":"","a":"1","b":"2","c\"":"3\n","x":"y","y":"x","z":"","é":"\ufffd"},"body":""}`},
		{"empty headers omitted", Envelope{Headers: map[string]string{}},
			`{"v":0,"key":"","tenant":"","provider":"","eventId":"","conversation":"","receivedAt":"0001-01-01T00:00:00Z","body":""}`},
		{"zone offset", Envelope{ReceivedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", -(5*3600+30*60)))},
			`{"v":0,"key":"","tenant":"","provider":"","eventId":"","conversation":"","receivedAt":"2026-01-02T03:04:05.000000006-05:30","body":""}`},
		{"whole seconds", Envelope{ReceivedAt: time.Unix(1, 0).UTC()},
			`{"v":0,"key":"","tenant":"","provider":"","eventId":"","conversation":"","receivedAt":"1970-01-01T00:00:01Z","body":""}`},
		{"local time", Envelope{ReceivedAt: time.Unix(1_795_000_000, 999999999).In(time.FixedZone("y", 3600))},
			`{"v":0,"key":"","tenant":"","provider":"","eventId":"","conversation":"","receivedAt":"2026-11-18T12:06:40.999999999+01:00","body":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.e.Encode()
			if err != nil || string(got) != tt.want {
				t.Errorf("Encode() = %s, %v\nwant       %s", got, err, tt.want)
			}
		})
	}
}

func TestEncodeRejectsTimesWithoutRFC3339(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 24*3600)),
	} {
		e := Envelope{Key: "k", ReceivedAt: at}
		if b, err := e.Encode(); err == nil {
			t.Errorf("Encode(%v) = %s, want an error", at, b)
		}
	}
}

// BenchmarkEncode measures Encode for a JSON body of the hot-path
// benchmark's sizes.
func BenchmarkEncode(b *testing.B) {
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20} {
		body := `{"id":"evt_1","type":"invoice.paid","data":{"object":{"customer":"cus_1","note":"a <b> & \"c\"\n"}},"pad":"`
		body += strings.Repeat("x", n-len(body)-2) + `"}`
		e := Envelope{Version: Version, Key: "acme#stripe#evt_1", Tenant: "acme", Provider: "stripe", EventID: "evt_1", Type: "invoice.paid",
			Conversation: "cus_1", ReceivedAt: time.Unix(1_795_000_000, 123).UTC(), Headers: map[string]string{"content-type": "application/json"}}
		e.SetBody([]byte(body))
		b.Run(fmt.Sprintf("size=%dKB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Encode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
