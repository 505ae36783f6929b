package webhook

import (
	"encoding/base64"
	"errors"
	"net/http"
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

// GitHub's own test values, from "Validating webhook deliveries" → "Testing
// the webhook payload validation":
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
const (
	hubDocSecret    = "It's a Secret to Everybody"
	hubDocPayload   = "Hello, World!"
	hubDocSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

func TestHubSignatureVerify(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		sig     string
		body    string
		want    error
	}{
		{"docs vector", []string{hubDocSecret}, hubDocSignature, hubDocPayload, nil},
		{"upper-case hex", []string{hubDocSecret}, "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17", hubDocPayload, nil},
		{"surrounding space", []string{hubDocSecret}, " " + hubDocSignature + " ", hubDocPayload, nil},
		{"rotation: second secret matches", []string{"old-secret", hubDocSecret}, hubDocSignature, hubDocPayload, nil},
		{"tampered body", []string{hubDocSecret}, hubDocSignature, "Hello, World?", ErrInvalidSignature},
		{"wrong secret", []string{"It's a Secret to Nobody"}, hubDocSignature, hubDocPayload, ErrInvalidSignature},
		{"missing header", []string{hubDocSecret}, "", hubDocPayload, ErrMissingSignature},
		{"sha1 prefix", []string{hubDocSecret}, "sha1=757107ea0eb2509fc211221cce984b8a37570b6d", hubDocPayload, ErrInvalidSignature},
		{"not hex", []string{hubDocSecret}, "sha256=zz", hubDocPayload, ErrInvalidSignature},
		{"odd length", []string{hubDocSecret}, hubDocSignature[:len(hubDocSignature)-1], hubDocPayload, ErrInvalidSignature},
		{"truncated signature", []string{hubDocSecret}, hubDocSignature[:40], hubDocPayload, ErrInvalidSignature},
		{"empty signature", []string{hubDocSecret}, "sha256=", hubDocPayload, ErrInvalidSignature},
		{"no secrets", nil, hubDocSignature, hubDocPayload, ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &Request{Header: http.Header{}, Body: []byte(tt.body)}
			if tt.sig != "" {
				req.Header.Set("X-Hub-Signature-256", tt.sig)
			}
			err := (HubSignature{}).Verify(req, Config{Secrets: tt.secrets}, time.Time{})
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q) = %v, want %v", tt.sig, err, tt.want)
			}
		})
	}
}

func TestHubSignatureSign(t *testing.T) {
	req := &Request{Body: []byte(hubDocPayload)}
	if err := (HubSignature{}).Sign(req, Config{Secrets: []string{hubDocSecret, "second"}}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("X-Hub-Signature-256"); got != hubDocSignature {
		t.Errorf("Sign(docs vector) = %q, want %q", got, hubDocSignature)
	}
	if err := (HubSignature{}).Sign(&Request{}, Config{}, time.Time{}); !errors.Is(err, ErrMisconfigured) {
		t.Errorf("Sign(no secrets) = %v, want %v", err, ErrMisconfigured)
	}
}

// FuzzHubSignature: nothing but the MAC (hex in either case) verifies.
func FuzzHubSignature(f *testing.F) {
	f.Add(hubDocSignature, []byte(hubDocPayload))
	f.Add("sha256=", []byte(""))
	f.Add("sha256=zz", []byte("{}"))
	f.Add("", []byte("x"))
	cfg := Config{Secrets: []string{"fuzz-secret"}}
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		req := &Request{Header: http.Header{"X-Hub-Signature-256": {sig}}, Body: body}
		signed := &Request{Body: body}
		if err := (HubSignature{}).Sign(signed, cfg, time.Time{}); err != nil {
			t.Fatal(err)
		}
		want := signed.Header.Get("X-Hub-Signature-256")
		if err := (HubSignature{}).Verify(req, cfg, time.Time{}); err == nil && !strings.EqualFold(strings.TrimSpace(sig), want) {
			t.Fatalf("Verify(%q) = nil for a signature that is not the MAC %q", sig, want)
		}
	})
}

func TestDecodeBase64(t *testing.T) {
	tests := []struct {
		name, in string
		enc      *base64.Encoding
		want     string
	}{
		{"canonical", "AQI=", base64.StdEncoding, "\x01\x02"},
		{"raw url", "-_8", base64.RawURLEncoding, "\xfb\xff"},
		{"line feed inside", "AQ\nI=", base64.StdEncoding, ""},
		{"carriage return inside", "AQ\rI=", base64.StdEncoding, ""},
		{"stray bits in the last character", "AQJ=", base64.StdEncoding, ""},
		{"missing padding", "AQI", base64.StdEncoding, ""},
		{"empty", "", base64.StdEncoding, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := DecodeBase64(tt.enc, tt.in)
			if string(got) != tt.want || ok != (tt.want != "") {
				t.Errorf("DecodeBase64(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
			}
		})
	}
}
