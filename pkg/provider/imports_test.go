package provider_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/hookpack/hookpack/"

// TestLedgerAndWorkerLinkNoAdapter fails when the ledger, the worker or a
// package they build on reaches a provider adapter (anything under
// pkg/provider), directly or through another package. Adapters belong to the
// code that verifies (ingest, and the tools that validate inbound
// configuration, which pass provider.Registry() in): the worker reads only
// outbound credentials, and the ledger only tenant ids (pkg/tenantid).
func TestLedgerAndWorkerLinkNoAdapter(t *testing.T) {
	roots := []string{"functions/worker", "pkg/worker", "pkg/ledger", "pkg/tenant", "pkg/tenantid"}
	args := []string{"list", "-json=ImportPath,Deps"}
	for _, r := range roots {
		args = append(args, "../../"+r)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		checked++
		for _, d := range p.Deps {
			if d == module+"pkg/provider" || strings.HasPrefix(d, module+"pkg/provider/") {
				t.Errorf("%s imports %s: only the verifying side links provider adapters", strings.TrimPrefix(p.ImportPath, module), strings.TrimPrefix(d, module))
			}
		}
	}
	if checked != len(roots) {
		t.Fatalf("go list reported %d packages, want %d (%v)", checked, len(roots), roots)
	}
}
