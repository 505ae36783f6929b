package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestMatchToken(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		got     string
		want    bool
	}{
		{"first", []string{"a-token", "b-token"}, "a-token", true},
		{"second", []string{"a-token", "b-token"}, "b-token", true},
		{"other", []string{"a-token"}, "a-tokem", false},
		{"prefix", []string{"a-token"}, "a-tok", false},
		{"empty never matches", []string{""}, "", false},
		{"no secrets", nil, "a-token", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchToken(tt.secrets, tt.got); got != tt.want {
				t.Errorf("MatchToken(%q) = %v, want %v", tt.got, got, tt.want)
			}
		})
	}
}

func TestBasicAuth(t *testing.T) {
	tests := []struct {
		name, header, want string
		err                error
	}{
		{"credentials", "Basic dXNlcjpwYXNz", "user:pass", nil},
		{"scheme case", "basic dXNlcjpwYXNz", "user:pass", nil},
		{"absent", "", "", ErrMissingSignature},
		{"bearer", "Bearer dXNlcjpwYXNz", "", ErrInvalidSignature},
		{"not base64", "Basic !!!", "", ErrInvalidSignature},
		{"no colon", "Basic dXNlcg==", "", ErrInvalidSignature},
		{"line break", "Basic dXNlcjpw\nYXNz", "", ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &Request{Header: http.Header{}}
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			got, err := BasicAuth(req)
			if got != tt.want || tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("BasicAuth(%q) = %q, %v; want %q, %v", tt.header, got, err, tt.want, tt.err)
			}
		})
	}
	req := &Request{}
	SetBasicAuth(req, "user:pass")
	if got, err := BasicAuth(req); got != "user:pass" || err != nil {
		t.Errorf("BasicAuth(SetBasicAuth(user:pass)) = %q, %v", got, err)
	}
}

func TestReplyEqual(t *testing.T) {
	a := Reply{Status: 200, Body: "x", Headers: map[string]string{"x-hook-secret": "s"}}
	if !a.Equal(Reply{Status: 200, Body: "x", Headers: map[string]string{"x-hook-secret": "s"}}) {
		t.Error("Equal(same reply) = false")
	}
	for _, o := range []Reply{{Status: 200, Body: "x"}, {Status: 200, Body: "y", Headers: a.Headers}, {Status: 204, Body: "x", Headers: a.Headers}} {
		if a.Equal(o) {
			t.Errorf("Equal(%+v) = true", o)
		}
	}
}

func TestPublicKeys(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		fields string
	}{
		{"setting then secrets", Config{Secrets: []string{"a", "b"}, Settings: map[string]string{"public_key": "k"}}, "settings.public_key,secrets[0],secrets[1]"},
		{"secrets only", Config{Secrets: []string{"a"}}, "secrets[0]"},
		{"none", Config{Settings: map[string]string{"public_key": " "}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := tt.cfg.PublicKeys("sender")
			var fields []string
			for _, k := range keys {
				fields = append(fields, k.Field)
			}
			if strings.Join(fields, ",") != tt.fields || (tt.fields == "") != errors.Is(err, ErrMisconfigured) {
				t.Errorf("PublicKeys() = %v, %v; want %s", fields, err, tt.fields)
			}
		})
	}
}

func TestVerifyPublicKeys(t *testing.T) {
	valid := func(s string) bool { return strings.HasPrefix(s, "key-") }
	tests := []struct {
		name    string
		cfg     Config
		good    string // the key the signature verifies under
		ok      bool
		err     error
		naming  string
		checked string
	}{
		{"second key verifies", Config{Secrets: []string{"key-a", "key-b"}}, "key-b", true, nil, "", "key-a,key-b"},
		{"none verifies, every key tried", Config{Secrets: []string{"key-b", "key-c"}, Settings: map[string]string{"public_key": "key-a"}}, "key-d", false, nil, "", "key-a,key-b,key-c"},
		{"bad key", Config{Secrets: []string{"key-b", "secret-c"}}, "key-b", false, ErrMisconfigured, "secrets[1]", "key-b"},
		{"no key", Config{}, "", false, ErrMisconfigured, "settings.public_key", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var checked []string
			ok, err := VerifyPublicKeys(tt.cfg, "sender", "a key", func(k string) (bool, bool) {
				if !valid(k) {
					return false, false
				}
				checked = append(checked, k)
				return k == tt.good, true
			})
			if ok != tt.ok || !errors.Is(err, tt.err) || (err != nil && !strings.Contains(err.Error(), tt.naming)) || strings.Join(checked, ",") != tt.checked {
				t.Errorf("VerifyPublicKeys() = %v, %v after checking %v; want %v, %v naming %q after %s", ok, err, checked, tt.ok, tt.err, tt.naming, tt.checked)
			}
			if err != nil && strings.Contains(err.Error(), "secret-c") {
				t.Errorf("VerifyPublicKeys() = %v: shows the key", err)
			}
			cerr := CheckPublicKeys(tt.cfg, "sender", "a key", valid)
			if !errors.Is(cerr, tt.err) {
				t.Errorf("CheckPublicKeys() = %v, want %v", cerr, tt.err)
			}
		})
	}
}
