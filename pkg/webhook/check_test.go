package webhook

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckSettings(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		want     error
		mentions string
	}{
		{"complete", Config{Secrets: []string{"s"}, Settings: map[string]string{"base_url": "https://h.example", "tolerance": "60s"}}, nil, ""},
		{"no secrets", Config{Settings: map[string]string{"base_url": "https://h.example"}}, ErrMisconfigured, "no secrets"},
		{"empty secret", Config{Secrets: []string{"s", ""}, Settings: map[string]string{"base_url": "x"}}, ErrMisconfigured, "secret 2"},
		{"missing", Config{Secrets: []string{"s"}}, ErrMisconfigured, "missing settings base_url"},
		{"unknown", Config{Secrets: []string{"s"}, Settings: map[string]string{"base_url": "x", "secret": "leak-me", "tolerence": "1"}}, ErrMisconfigured, "unknown settings secret, tolerence (known: base_url, tolerance)"},
		{"bad tolerance", Config{Secrets: []string{"s"}, Settings: map[string]string{"base_url": "x", "tolerance": "-5s"}}, ErrMisconfigured, "tolerance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.CheckSettings("square", []string{"base_url"}, []string{"tolerance"})
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("CheckSettings(%v) = %v, want %v", tt.cfg.Settings, err, tt.want)
			}
			if err != nil && (!strings.Contains(err.Error(), tt.mentions) || !strings.Contains(err.Error(), "square")) {
				t.Errorf("CheckSettings(%v) = %q, want it to name square and %q", tt.cfg.Settings, err, tt.mentions)
			}
			if err != nil && strings.Contains(err.Error(), "leak-me") {
				t.Errorf("CheckSettings error %q quotes a value", err)
			}
		})
	}
	if err := (Config{Secrets: []string{"s"}, Settings: map[string]string{"x": "1"}}).CheckSettings("github", nil, nil); err == nil || !strings.Contains(err.Error(), "takes none") {
		t.Errorf("CheckSettings(a setting for a provider without any) = %v", err)
	}
}
