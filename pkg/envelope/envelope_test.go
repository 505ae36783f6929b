package envelope

import (
	"bytes"
	"encoding/json"
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
		{"json text", []byte(`{"id":"evt_1","name":"caf\u00e9 \ud83d\ude00"}`), ""},
		{"utf8 text", []byte("Body=héllo&From=%2B1"), ""},
		{"binary", []byte{0xff, 0x00, 0xfe}, "base64"},
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
// README's envelope description cannot drift from the code.
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

// jsonEncode is the encoding/json encoder Encode replaced; Encode must stay
// byte for byte equal to it.
func jsonEncode(e *Envelope) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func TestEncodeMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 22, 17, 0, 0, 123000000, time.UTC)
	pad := strings.Repeat("x", 300)
	tests := []struct {
		name string
		e    Envelope
	}{
		{"minimal", Envelope{}},
		{"fixture", Envelope{Version: Version, Key: "acme#stripe#evt_1", Tenant: "acme", Provider: "stripe", EventID: "evt_1", Type: "invoice.paid", Conversation: "cus_1", ReceivedAt: at, Body: `{"id":"evt_1","html":"<a href=\"x\">&amp;</a>"}`, Headers: map[string]string{"content-type": "application/json"}}},
		{"binary body", Envelope{Version: Version, Key: "k", ReceivedAt: at, Body: "/w==", BodyEncoding: "base64"}},
		{"escapes everywhere", Envelope{Version: -3, Key: "a\"b\\c\n", Tenant: "\x00\x1f\x7f", Provider: "caf\xe9", EventID: "\u2028\u2029", Type: "t\tt", Conversation: "\xe2\x80", ReceivedAt: at, Body: pad + "\"\u2028\r\n\xe2\x80\x99" + pad + "\\" + pad}},
		{"many headers", Envelope{Headers: map[string]string{"b": "2", "a": "1", "c\"": "3\n", "": "", "é": "\xff", "z": "", "y": "x", "x": "y", "w": "w", "v": "v"}}},
		{"empty headers omitted", Envelope{Headers: map[string]string{}}},
		{"zone offset", Envelope{ReceivedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", -(5*3600+30*60)))}},
		{"whole seconds", Envelope{ReceivedAt: time.Unix(1, 0).UTC()}},
		{"local time", Envelope{ReceivedAt: time.Unix(1_795_000_000, 999999999).In(time.FixedZone("y", 3600))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := jsonEncode(&tt.e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tt.e.Encode()
			if err != nil || string(got) != string(want) {
				t.Errorf("Encode() = %s, %v\nwant       %s", got, err, want)
			}
			if prefixed, err := tt.e.AppendJSON([]byte("x")); err != nil || string(prefixed) != "x"+string(want) {
				t.Errorf("AppendJSON(x) = %s, %v", prefixed, err)
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
		if _, err := jsonEncode(&e); err == nil {
			t.Fatalf("encoding/json encodes %v", at)
		}
		if b, err := e.Encode(); err == nil {
			t.Errorf("Encode(%v) = %s, want an error like encoding/json's", at, b)
		}
		if b, err := e.AppendJSON([]byte("x")); err == nil || string(b) != "x" {
			t.Errorf("AppendJSON(x) = %q, %v; want x and an error", b, err)
		}
	}
}

// FuzzEncode compares Encode with encoding/json for arbitrary field contents:
// invalid UTF-8, control characters, U+2028/2029, odd times and zones.
func FuzzEncode(f *testing.F) {
	f.Add(1, "acme#stripe#evt_1", "acme", "stripe", "evt_1", "invoice.paid", "cus_1", `{"id":"evt_1"}`, "", "content-type", "application/json", int64(1_795_000_000), int64(123), 0)
	f.Add(-7, "k\xff", "\x00", "\u2028", "\u2029", "", "\xe2\x80", "<&>\"\\\n\t\b\f\r\x7f", "base64", "", "", int64(-62135596800), int64(0), -19800)
	f.Add(0, "", "", "", "", "", "", strings.Repeat("a", 100)+"\x01"+strings.Repeat("é", 30), "", "a", "\xff", int64(253402300799), int64(999999999), 86399)
	f.Fuzz(func(t *testing.T, v int, key, tenant, provider, eventID, typ, conv, body, bodyEnc, hk, hv string, sec, nsec int64, offset int) {
		e := Envelope{
			Version: v, Key: key, Tenant: tenant, Provider: provider, EventID: eventID, Type: typ, Conversation: conv,
			ReceivedAt: time.Unix(sec, nsec).In(time.FixedZone("z", offset%(48*3600))), Body: body, BodyEncoding: bodyEnc,
		}
		if hk != "" || hv != "" {
			e.Headers = map[string]string{hk: hv, hv + "x": hk}
		}
		want, wantErr := jsonEncode(&e)
		got, err := e.Encode()
		if (err != nil) != (wantErr != nil) || string(got) != string(want) {
			t.Fatalf("Encode() = %q, %v\nencoding/json %q, %v", got, err, want, wantErr)
		}
	})
}

// BenchmarkEncode compares Encode with the encoding/json encoder it
// replaced, for a JSON body padded to the hot-path benchmark's sizes.
func BenchmarkEncode(b *testing.B) {
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20} {
		body := `{"id":"evt_1","type":"invoice.paid","data":{"object":{"customer":"cus_1","note":"a <b> & \"c\"\n"}},"pad":"`
		body += strings.Repeat("x", n-len(body)-2) + `"}`
		e := Envelope{Version: Version, Key: "acme#stripe#evt_1", Tenant: "acme", Provider: "stripe", EventID: "evt_1", Type: "invoice.paid",
			Conversation: "cus_1", ReceivedAt: time.Unix(1_795_000_000, 123).UTC(), Headers: map[string]string{"content-type": "application/json"}}
		e.SetBody([]byte(body))
		for _, enc := range []struct {
			name string
			fn   func(*Envelope) ([]byte, error)
		}{{"Encode", (*Envelope).Encode}, {"encoding-json", jsonEncode}} {
			b.Run(fmt.Sprintf("size=%dKB/%s", n>>10, enc.name), func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := enc.fn(&e); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
