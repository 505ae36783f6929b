package tenant

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck runs `tenant.sh check` as an operator does before `make run`
// or an onboarding: with an aws on PATH that records being called, so a
// check that reached for AWS fails. It exits 0 for valid files and 1 with
// every problem of every file named, by file, tenant and field path.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	called := filepath.Join(dir, "aws-called")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "aws"), []byte("#!/bin/sh\ntouch "+called+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	misspelt := write("misspelt.json", `{"tenants":{"a":{"providers":{"stripe":{"secrets":["whsec_x"]},"github":{"secrets":["s"]}},
		"outbound":{"destinations":[{"name":"invoices","url":"https://a.example","secrets":["whsec_y"],"filter":{"event":["stripe:invoice.*"]}}]}}}}`)
	broken := write("broken.json", `{"tenants":{"b":{"providers":{"github":{"secrets":[""]}},"outbound":{"targetUrl":"ftp://x","secrets":["whsec_y"],"retries":2}}}}`)
	in := write("in.json", `{"providers":{"github":{"secrets":["s"]}}}`)
	tests := []struct {
		name string
		args []string
		want int
		out  []string
	}{
		{"make run's tenants file", []string{filepath.Join("..", "..", "events", "tenants.json")}, 0, nil},
		{"a tenant's files", []string{"acme", in}, 0, nil},
		{"every problem of every tenants file", []string{misspelt, broken}, 1, []string{
			`tenant: tenants file ` + misspelt + `: tenants.a.outbound.destinations[0].filter: unknown field "event"`,
			`tenants.b.outbound: unknown field "retries"`, `tenant "b": providers.github.secrets[0]: empty secret`,
			`tenant "b": outbound.targetUrl: not an absolute http(s) URL`}},
		{"a tenant's misspelt file", []string{"acme", in, write("out.json", `{"targetUrl":"https://a.example","secrets":["whsec_y"],"timout":"5s"}`)}, 1,
			[]string{`unknown field "timout"`}},
		{"a missing file", []string{filepath.Join(dir, "none.json")}, 1, []string{"none.json"}},
		{"nothing to check", nil, 1, []string{"usage"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("./tenant.sh", append([]string{"check"}, tt.args...)...)
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.want {
				t.Errorf("tenant.sh check %v exited %d, want %d:\n%s", tt.args, code, tt.want, out)
			}
			for _, w := range tt.out {
				if !strings.Contains(string(out), w) {
					t.Errorf("tenant.sh check %v said:\n%s\nwant %q in it", tt.args, out, w)
				}
			}
			if strings.Contains(string(out), "whsec_y") {
				t.Errorf("tenant.sh check %v quoted a secret:\n%s", tt.args, out)
			}
		})
	}
	if _, err := os.Stat(called); err == nil {
		t.Error("tenant.sh check called aws")
	}
}
