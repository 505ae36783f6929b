package lambdaenv

import (
	"strings"
	"testing"
	"time"
)

func TestRequired(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"all set", map[string]string{"A_TABLE": "t", "B_PREFIX": "/p"}, ""},
		{"one missing", map[string]string{"A_TABLE": "t", "B_PREFIX": ""}, "B_PREFIX required"},
		{"both missing, sorted", map[string]string{"A_TABLE": "", "B_PREFIX": ""}, "A_TABLE, B_PREFIX required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var a, b string
			err := Required(map[string]*string{"A_TABLE": &a, "B_PREFIX": &b})
			if got := errString(err); got != tt.wantErr {
				t.Fatalf("Required() = %q, want %q", got, tt.wantErr)
			}
			if err == nil && (a != "t" || b != "/p") {
				t.Errorf("Required() set %q, %q; want t, /p", a, b)
			}
		})
	}
}

func TestDurationsAndCount(t *testing.T) {
	tests := []struct {
		name, lease, attempts string
		wantLease             time.Duration
		wantAttempts          int
		wantErr               string
	}{
		{"defaults kept when unset", "", "", time.Minute, 3, ""},
		{"values read", "45s", "15", 45 * time.Second, 15, ""},
		{"bad duration names the variable", "soon", "", 0, 0, `LEASE: want a non-negative duration such as 30s, got "soon"`},
		{"negative duration", "-1s", "", 0, 0, "LEASE: want a non-negative duration"},
		{"bad count names the variable", "", "-2", 0, 0, `ATTEMPTS: want a non-negative integer, got "-2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LEASE", tt.lease)
			t.Setenv("ATTEMPTS", tt.attempts)
			lease, attempts := time.Minute, 3
			err := Durations(map[string]*time.Duration{"LEASE": &lease})
			if err == nil {
				err = Count("ATTEMPTS", &attempts)
			}
			if tt.wantErr != "" {
				if !strings.Contains(errString(err), tt.wantErr) {
					t.Fatalf("error = %q, want it to contain %q", errString(err), tt.wantErr)
				}
				return
			}
			if err != nil || lease != tt.wantLease || attempts != tt.wantAttempts {
				t.Errorf("got %v, %d, %v; want %v, %d", lease, attempts, err, tt.wantLease, tt.wantAttempts)
			}
		})
	}
}

func TestBool(t *testing.T) {
	tests := []struct {
		value   string
		want    bool
		wantErr bool
	}{{"", true, false}, {"true", true, false}, {"false", false, false}, {"yes", true, true}, {"TRUE", true, true}}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Setenv("STRICT", tt.value)
			got := true // the default when unset
			err := Bool("STRICT", &got)
			if got != tt.want || (err != nil) != tt.wantErr || (err != nil && !strings.Contains(err.Error(), "STRICT: want true or false")) {
				t.Errorf("Bool(%q) = %v, %v; want %v, error %v", tt.value, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestLoggerLevel(t *testing.T) {
	for _, tt := range []struct {
		env       string
		wantDebug bool
	}{{"", false}, {"DEBUG", true}, {"debug", true}, {"TRACE", false}, {"WARN", false}} {
		t.Setenv("AWS_LAMBDA_LOG_LEVEL", tt.env)
		if got := Logger().Enabled(t.Context(), -4); got != tt.wantDebug {
			t.Errorf("AWS_LAMBDA_LOG_LEVEL=%q: debug enabled = %v, want %v", tt.env, got, tt.wantDebug)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
