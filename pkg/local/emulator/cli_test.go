package emulator_test

import (
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/emulator"
)

// TestCLIEnv: the variables CLIEnv sets come after the caller's own (a
// command's environment takes the last value of a name), so a developer's
// AWS_REGION or AWS_ENDPOINT_URL never points the CLI away from moto.
func TestCLIEnv(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-3")
	t.Setenv("AWS_ENDPOINT_URL", "https://example.invalid")
	t.Setenv("PATH", "/usr/bin")
	last := map[string]string{}
	for _, kv := range emulator.CLIEnv("http://127.0.0.1:4566", "/opt/aws/bin/aws", "STACK_NAME=core") {
		k, v, _ := strings.Cut(kv, "=")
		last[k] = v
	}
	for k, want := range map[string]string{
		"AWS_ENDPOINT_URL":   "http://127.0.0.1:4566",
		"AWS_REGION":         emulator.Region,
		"AWS_DEFAULT_REGION": emulator.Region,
		"AWS_ACCESS_KEY_ID":  "test",
		"PATH":               "/opt/aws/bin:/usr/bin",
		"STACK_NAME":         "core",
	} {
		if last[k] != want {
			t.Errorf("CLIEnv(…) %s = %q, want %q", k, last[k], want)
		}
	}
}

func TestAWSCLIMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if bin, err := emulator.AWSCLI(); err == nil || !strings.Contains(err.Error(), "not on PATH") {
		t.Errorf("AWSCLI() without aws on PATH = %q, %v; want an error saying how to install it", bin, err)
	}
}
