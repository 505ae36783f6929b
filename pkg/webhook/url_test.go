package webhook

import (
	"errors"
	"testing"
	"time"
)

func TestRebaseURL(t *testing.T) {
	const raw = "https://abc.execute-api.eu-west-1.amazonaws.com/webhooks/acme/twilio?foo=1&bar=%2B2"
	tests := []struct {
		name, raw, base, want string
		err                   error
	}{
		{"empty base keeps raw", raw, "", raw, nil},
		{"custom domain", raw, "https://hooks.example.com", "https://hooks.example.com/webhooks/acme/twilio?foo=1&bar=%2B2", nil},
		{"trailing slash", raw, "https://hooks.example.com/", "https://hooks.example.com/webhooks/acme/twilio?foo=1&bar=%2B2", nil},
		{"path prefix", raw, "http://example.com:8080/api/", "http://example.com:8080/api/webhooks/acme/twilio?foo=1&bar=%2B2", nil},
		{"no path", "https://a.example/", "https://b.example", "https://b.example/", nil},
		{"query only", "https://a.example?x=1", "https://b.example", "https://b.example/?x=1", nil},
		{"host only", "https://a.example", "https://b.example", "https://b.example/", nil},
		{"relative base", raw, "hooks.example.com", "", ErrMisconfigured},
		{"ftp base", raw, "ftp://hooks.example.com", "", ErrMisconfigured},
		{"base with query", raw, "https://hooks.example.com?x=1", "", ErrMisconfigured},
		{"raw without scheme", "/webhooks/acme/twilio", "https://hooks.example.com", "", ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RebaseURL(tt.raw, tt.base)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("RebaseURL(%q, %q) error = %v, want %v", tt.raw, tt.base, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("RebaseURL(%q, %q) = %q, %v; want %q", tt.raw, tt.base, got, err, tt.want)
			}
		})
	}
}

func TestParseToleranceRejectsNonPositive(t *testing.T) {
	tests := []struct {
		raw  string
		want time.Duration
		err  error
	}{
		{"", time.Minute, nil},
		{"30", 30 * time.Second, nil},
		{"5m", 5 * time.Minute, nil},
		{"0", 0, ErrMisconfigured},
		{"-5", 0, ErrMisconfigured},
		{"-1s", 0, ErrMisconfigured},
		{"soon", 0, ErrMisconfigured},
	}
	for _, tt := range tests {
		got, err := ParseTolerance(tt.raw, time.Minute)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("ParseTolerance(%q) = %v, %v; want %v", tt.raw, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseTolerance(%q) = %v, %v; want %v", tt.raw, got, err, tt.want)
		}
	}
}
