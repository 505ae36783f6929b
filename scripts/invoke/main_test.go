package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestLoadEnv(t *testing.T) {
	tests := []struct {
		name, function, endpoint, ddb string
		want                          []string
	}{
		{"file as is", "IngestFunction", "", "", []string{
			"AWS_ENDPOINT_URL=http://127.0.0.1:4566",
			"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000",
			"QUEUE_URL_TEMPLATE=http://127.0.0.1:4566/123456789012/hookpack-local_{tenant}.fifo",
			"AWS_ACCESS_KEY_ID=test", "AWS_REGION=us-east-1",
		}},
		{"make run on other ports", "WorkerFunction", "http://127.0.0.1:5000", "http://127.0.0.1:9000", []string{
			"AWS_ENDPOINT_URL=http://127.0.0.1:5000",
			"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9000",
			"QUEUE_URL_TEMPLATE=http://127.0.0.1:5000/123456789012/hookpack-local_{tenant}.fifo",
			"LEDGER_TABLE=hookpack-local-ledger",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := loadEnv("../../events/env.json", tt.function, tt.endpoint, tt.ddb)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !slices.Contains(env, w) {
					t.Errorf("loadEnv(%s, %q, %q) = %v, want it to hold %s", tt.function, tt.endpoint, tt.ddb, env, w)
				}
			}
		})
	}
	if _, err := loadEnv("../../events/env.json", "NoSuchFunction", "", ""); err == nil {
		t.Error("loadEnv(NoSuchFunction) = nil error, want one")
	}
}

// TestEnvFileHoldsOnlyDeclaredVariables: `sam local invoke --env-vars`
// passes only the variables template.yaml declares (Globals for every
// function, a function's own Environment), so anything else in
// events/env.json would silently never reach the function.
func TestEnvFileHoldsOnlyDeclaredVariables(t *testing.T) {
	declared := declaredVariables(t, "../../template.yaml")
	if len(declared["Globals"]) == 0 || len(declared["IngestFunction"]) == 0 {
		t.Fatalf("found no declared variables in template.yaml: %v", declared)
	}
	b, err := os.ReadFile("../../events/env.json")
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]map[string]string
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	for section, vars := range file {
		for name := range vars {
			own := section != "Parameters" && slices.Contains(declared[section], name)
			if !own && !slices.Contains(declared["Globals"], name) {
				t.Errorf("events/env.json %s.%s: template.yaml does not declare it for that function, so it never reaches it", section, name)
			}
		}
	}
}

// declaredVariables returns the Environment.Variables names of template.yaml
// by section: "Globals" and each resource's logical id.
func declaredVariables(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	resource := regexp.MustCompile(`^  ([A-Za-z0-9]+):\s*$`)
	variable := regexp.MustCompile(`^\s+([A-Z][A-Z0-9_]*):`)
	out := map[string][]string{}
	section, indent := "", -1
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		n := len(line) - len(trimmed)
		switch {
		case strings.HasPrefix(line, "Globals:"):
			section = "Globals"
		case resource.MatchString(line) && section != "Globals" || strings.HasPrefix(line, "Resources:"):
			if m := resource.FindStringSubmatch(line); m != nil {
				section = m[1]
			}
		}
		if section == "Globals" && n == 0 && trimmed != "" && !strings.HasPrefix(line, "Globals:") {
			section = ""
		}
		switch {
		case trimmed == "Variables:":
			indent = n
		case indent >= 0 && trimmed != "" && !strings.HasPrefix(trimmed, "#") && n <= indent:
			indent = -1
		case indent >= 0:
			if m := variable.FindStringSubmatch(line); m != nil {
				out[section] = append(out[section], m[1])
			}
		}
	}
	return out
}
