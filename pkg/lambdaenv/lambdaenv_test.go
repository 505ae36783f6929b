package lambdaenv

import (
	"testing"
	"time"
)

// TestEnv reads one variable of each kind and checks the values and that
// every bad variable is named in one error, in the order read.
func TestEnv(t *testing.T) {
	tests := []struct {
		name                string
		table, lease, count string
		strict, bucket      string
		wantLease           time.Duration
		wantCount           int
		wantStrict          bool
		wantErr             string
	}{
		{name: "unset optional ones read as zero", table: "t"},
		{name: "values read", table: "t", lease: "45s", count: "15", strict: "true", bucket: "b",
			wantLease: 45 * time.Second, wantCount: 15, wantStrict: true},
		{name: "false", table: "t", strict: "false"},
		{name: "missing required", wantErr: "TABLE required"},
		{name: "bad duration names the variable", table: "t", lease: "soon",
			wantErr: `LEASE: want a non-negative duration such as 30s, got "soon"`},
		{name: "negative duration", table: "t", lease: "-1s",
			wantErr: `LEASE: want a non-negative duration such as 30s, got "-1s"`},
		{name: "bad count names the variable", table: "t", count: "-2",
			wantErr: `ATTEMPTS: want a non-negative integer, got "-2"`},
		{name: "bool is exact", table: "t", strict: "TRUE", wantErr: `STRICT: want true or false, got "TRUE"`},
		{name: "every error at once", lease: "soon", count: "x", strict: "yes",
			wantErr: "TABLE required\n" + `LEASE: want a non-negative duration such as 30s, got "soon"` + "\n" +
				`ATTEMPTS: want a non-negative integer, got "x"` + "\n" + `STRICT: want true or false, got "yes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range map[string]string{"TABLE": tt.table, "LEASE": tt.lease, "ATTEMPTS": tt.count, "STRICT": tt.strict, "BUCKET": tt.bucket} {
				t.Setenv(k, v)
			}
			var env Env
			table, bucket := env.Required("TABLE"), env.Optional("BUCKET")
			lease, count, strict := env.Duration("LEASE"), env.Count("ATTEMPTS"), env.Bool("STRICT")
			if got := errString(env.Err()); got != tt.wantErr {
				t.Fatalf("Err() = %q, want %q", got, tt.wantErr)
			}
			if tt.wantErr != "" {
				return
			}
			if table != tt.table || bucket != tt.bucket || lease != tt.wantLease || count != tt.wantCount || strict != tt.wantStrict {
				t.Errorf("got %q %q %v %d %v; want %q %q %v %d %v", table, bucket, lease, count, strict,
					tt.table, tt.bucket, tt.wantLease, tt.wantCount, tt.wantStrict)
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
