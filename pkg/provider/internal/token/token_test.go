package token

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/webhook"
)

func TestHandshake(t *testing.T) {
	onboarding := map[string]string{Onboarding: "true"}
	tests := []struct {
		name           string
		cfg            webhook.Config
		secret         string
		known, forward bool
		err            error
	}{
		{"configured", webhook.Config{Secrets: []string{"old", "new-secret"}}, "new-secret", true, false, nil},
		{"configured while onboarding", webhook.Config{Secrets: []string{"new-secret"}, Settings: onboarding}, "new-secret", true, false, nil},
		{"unknown while onboarding", webhook.Config{Settings: onboarding}, "new-secret", false, true, nil},
		{"unknown", webhook.Config{Secrets: []string{"old"}}, "new-secret", false, false, webhook.ErrForbidden},
		{"onboarding not true", webhook.Config{Settings: map[string]string{Onboarding: "yes"}}, "new-secret", false, false, webhook.ErrForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			known, forward, err := Handshake(tt.cfg, "sender", tt.secret)
			if known != tt.known || forward != tt.forward || !errors.Is(err, tt.err) {
				t.Errorf("Handshake() = %v, %v, %v; want %v, %v, %v", known, forward, err, tt.known, tt.forward, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), tt.secret) {
				t.Errorf("Handshake() error %q shows the secret", err)
			}
		})
	}
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name  string
		check func(webhook.Config, string) error
		cfg   webhook.Config
		want  string // "" for nil, else text the error names
	}{
		{"onboarding without secrets", CheckOnboarding, webhook.Config{Settings: map[string]string{Onboarding: "true"}}, ""},
		{"secrets", CheckOnboarding, webhook.Config{Secrets: []string{"s"}}, ""},
		{"neither", CheckOnboarding, webhook.Config{}, "secrets"},
		{"basic credentials", CheckBasic, webhook.Config{Secrets: []string{"u:p"}}, ""},
		{"basic without colon", CheckBasic, webhook.Config{Secrets: []string{"u:p", "hunter2-only"}}, "secrets[1]"},
		{"basic without secrets", CheckBasic, webhook.Config{}, "secrets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.cfg, "sender")
			if tt.want == "" && err != nil || tt.want != "" && (!errors.Is(err, webhook.ErrMisconfigured) || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("check = %v, want %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("check error %q shows a secret", err)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	cfg := webhook.Config{Secrets: []string{"tok-1", "tok-2"}}
	tests := []struct {
		name, header string
		want         error
	}{
		{"second secret", "tok-2", nil},
		{"absent", "", webhook.ErrMissingSignature},
		{"blank", "  ", webhook.ErrMissingSignature},
		{"other", "tok-3", webhook.ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &webhook.Request{Header: http.Header{}}
			if tt.header != "" {
				req.Header.Set("X-Token", tt.header)
			}
			err := Verify(req, cfg, "sender", "X-Token")
			if !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q) = %v, want %v", tt.header, err, tt.want)
			}
		})
	}
	if err := Verify(&webhook.Request{Header: http.Header{"X-Token": {"t"}}}, webhook.Config{}, "sender", "X-Token"); !errors.Is(err, webhook.ErrMisconfigured) {
		t.Errorf("Verify(no secrets) = %v", err)
	}
}

func TestAnswer(t *testing.T) {
	reply := webhook.Reply{Status: http.StatusOK, Body: "echo"}
	tests := []struct {
		name   string
		cfg    webhook.Config
		want   webhook.Reply
		wantOK bool
		err    error
	}{
		{"configured", webhook.Config{Secrets: []string{"new-secret"}}, reply, true, nil},
		{"onboarding", webhook.Config{Settings: map[string]string{Onboarding: "true"}}, webhook.Reply{}, false, nil},
		{"unknown", webhook.Config{Secrets: []string{"old"}}, webhook.Reply{}, true, webhook.ErrForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := Answer(tt.cfg, "sender", "new-secret", reply)
			if !got.Equal(tt.want) || ok != tt.wantOK || tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("Answer() = %v, %v, %v; want %v, %v, %v", got, ok, err, tt.want, tt.wantOK, tt.err)
			}
		})
	}
}

func TestHandshakeID(t *testing.T) {
	id := HandshakeID("handshake", "new-secret")
	if !strings.HasPrefix(id, "handshake:") || strings.Contains(id, "new-secret") || id != HandshakeID("handshake", "new-secret") || id == HandshakeID("handshake", "other") {
		t.Errorf("HandshakeID() = %q, want a stable hash of the secret that does not show it", id)
	}
}
