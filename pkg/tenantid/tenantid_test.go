package tenantid

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"acme", true}, {"a", true}, {"acme-eu-1", true}, {strings.Repeat("a", MaxLen), true},
		{"", false}, {strings.Repeat("a", MaxLen+1), false}, {"-acme", false}, {"Acme", false},
		{"acme_eu", false}, {"acme/../x", false}, {"acme#1", false}, {"ac me", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := Validate(tt.id)
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
				t.Errorf("Validate(%q) = %v, want ok=%v", tt.id, err, tt.ok)
			}
		})
	}
}
