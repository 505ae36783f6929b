package route

import (
	"regexp"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"invoice.paid", "invoice.paid", true},
		{"invoice.paid", "invoice.paid2", false},
		{"invoice.paid", "invoice.pai", false},
		{"invoice.*", "invoice.paid", true},
		{"invoice.*", "invoice.payment_failed", true},
		{"invoice.*", "invoice.", true}, // * matches an empty run
		{"invoice.*", "invoiceitem.created", false},
		{"*", "", true},
		{"*", "anything/at.all", true},
		{"*.created", "customer.subscription.created", true}, // across dots
		{"orders/*", "orders/create", true},
		{"*/create", "orders/create", true},
		{"*/create", "orders/create/x", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "acb", false},
		{"a*b", "abab", true}, // the last b ends it after backtracking
		{"a*a", "a", false},
		{"**", "x", true},
		{"", "", true},
		{"", "x", false},
		{"x", "", false},
	}
	for _, tt := range tests {
		if got := Glob(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// FuzzGlob holds Glob to the regular expression that states the rule: *
// is any run of bytes, everything else is itself.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{{"invoice.*", "invoice.paid"}, {"a*b*c", "aXbYc"}, {"*/x", "a/x/x"}, {"*", ""}, {"é*", "éa\n"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		parts := strings.Split(pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re, err := regexp.Compile(`(?s)\A` + strings.Join(parts, ".*") + `\z`)
		if err != nil {
			t.Skip() // a pattern that is not UTF-8
		}
		if got, want := Glob(pattern, s), re.MatchString(s); got != want {
			t.Errorf("Glob(%q, %q) = %v, want %v", pattern, s, got, want)
		}
	})
}
