package envelope

import (
	"bytes"
	"errors"
	"os"
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
