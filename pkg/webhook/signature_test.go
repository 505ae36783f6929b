package webhook

import (
	"bytes"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestRequiredHeader(t *testing.T) {
	tests := []struct {
		name, value, want string
		wantErr           error
	}{
		{"present", " abc ", "abc", nil},
		{"absent", "", "", ErrMissingSignature},
		{"blank", "  ", "", ErrMissingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &Request{Header: http.Header{}}
			if tt.value != "" {
				req.Header.Set("X-Sig", tt.value)
			}
			got, err := RequiredHeader(req, "X-Sig")
			if got != tt.want || !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("RequiredHeader(%q) = %q, %v, want %q, %v", tt.value, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestHexSignature(t *testing.T) {
	tests := []struct {
		name, sig string
		want      []byte
		wantErr   error
	}{
		{"prefixed hex", "v0=0aff", []byte{0x0a, 0xff}, nil},
		{"no prefix", "0aff", nil, ErrInvalidSignature},
		{"not hex", "v0=zz", nil, ErrInvalidSignature},
		{"empty", "v0=", nil, ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := HexSignature("X-Sig", tt.sig, "v0=")
			if !bytes.Equal(got, tt.want) || !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("HexSignature(%q) = %x, %v, want %x, %v", tt.sig, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestStamped(t *testing.T) {
	s := Stamped{Signature: "X-Sig", Timestamp: "X-Ts"}
	sign := func(secret, ts string) (string, error) { return secret + "@" + ts, nil }
	req := &Request{}
	if err := s.Sign(req, Config{}, "sender", time.Unix(1700000000, 0), sign); !errors.Is(err, ErrMisconfigured) || req.Header != nil {
		t.Fatalf("Sign(no secrets) = %v, headers %v; want ErrMisconfigured, none set", err, req.Header)
	}
	if err := s.Sign(req, Config{Secrets: []string{"k1", "k2"}}, "sender", time.Unix(1700000000, 0), sign); err != nil {
		t.Fatalf("Sign() = %v", err)
	}
	sig, ts, err := s.Headers(req)
	if sig != "k1@1700000000" || ts != "1700000000" || err != nil {
		t.Errorf("Headers() = %q, %q, %v; want the signature and timestamp Sign set", sig, ts, err)
	}
	req.Header.Del("X-Ts")
	if _, _, err := s.Headers(req); !errors.Is(err, ErrMissingSignature) {
		t.Errorf("Headers(no timestamp) = %v, want ErrMissingSignature", err)
	}
}
