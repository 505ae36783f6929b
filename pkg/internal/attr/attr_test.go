package attr

import (
	"math"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 1, -7, 1_798_000_000_123, math.MaxInt64, math.MinInt64} {
		if got := ToInt(N(n)); got != n {
			t.Errorf("ToInt(N(%d)) = %d, want %d", n, got, n)
		}
	}
	for _, s := range []string{"", "paused by operator", "destinations#acme"} {
		if got := ToString(S(s)); got != s {
			t.Errorf("ToString(S(%q)) = %q, want %q", s, got, s)
		}
	}
}

func TestToIntZero(t *testing.T) {
	tests := []struct {
		name string
		v    types.AttributeValue
	}{
		{"none", nil},
		{"bool", &types.AttributeValueMemberBOOL{Value: true}},
		{"a string of digits", S("42")},
		{"not an integer", &types.AttributeValueMemberN{Value: "1.5"}},
		{"past int64", &types.AttributeValueMemberN{Value: "9223372036854775808"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToInt(tt.v); got != 0 {
				t.Errorf("ToInt(%#v) = %d, want 0", tt.v, got)
			}
		})
	}
}

func TestToStringEmpty(t *testing.T) {
	tests := []struct {
		name string
		v    types.AttributeValue
	}{
		{"none", nil},
		{"a number", N(42)},
		{"a string set", &types.AttributeValueMemberSS{Value: []string{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToString(tt.v); got != "" {
				t.Errorf("ToString(%#v) = %q, want \"\"", tt.v, got)
			}
		})
	}
}
