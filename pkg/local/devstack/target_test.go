package devstack

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/forward"
)

func TestVerifyForward(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rotated := "whsec_" + "b2xkLXNlY3JldA==" // "old-secret"
	body := []byte(`{"id":"evt_1"}`)
	signed := func(at time.Time, secrets ...string) http.Header {
		sig, err := forward.Sign("msg_1", at, body, secrets)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(forward.HeaderID, "msg_1")
		h.Set(forward.HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
		h.Set(forward.HeaderSignature, sig)
		return h
	}
	now := time.Now()
	tests := []struct {
		name    string
		h       http.Header
		body    []byte
		secrets []string
		ok      bool
	}{
		{"signed now", signed(now, secret), body, []string{secret}, true},
		{"the second of two secrets", signed(now, secret), body, []string{rotated, secret}, true},
		{"tampered body", signed(now, secret), []byte(`{"id":"evt_2"}`), []string{secret}, false},
		{"another secret", signed(now, rotated), body, []string{secret}, false},
		{"ten minutes old", signed(now.Add(-10*time.Minute), secret), body, []string{secret}, false},
		{"no headers", http.Header{}, body, []string{secret}, false},
		{"no secret", signed(now, secret), body, nil, false},
		{"unusable secret", signed(now, secret), body, []string{"whsec_%%%"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyForward(tt.h, tt.body, tt.secrets)
			if (err == nil) != tt.ok {
				t.Errorf("VerifyForward() = %v, want ok %v", err, tt.ok)
			}
			if err != nil && (strings.Contains(err.Error(), "MfKQ9r8") || strings.Contains(err.Error(), "b2xk")) {
				t.Errorf("VerifyForward() error %q names a secret", err)
			}
		})
	}
	if err := VerifyForward(http.Header{}, body, nil); !errors.Is(err, ErrNoSecret) {
		t.Errorf("VerifyForward(no secrets) = %v, want ErrNoSecret", err)
	}
}
