package local_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/hookpack/hookpack/"

// receiverLibrary is the official Standard Webhooks Go library, which the
// tests of pkg/local/receiver verify forwards with as a tenant's endpoint
// would; no function links it.
const receiverLibrary = "github.com/standard-webhooks/standard-webhooks/"

// TestProductNeverImportsLocal fails when a Lambda main or a product package
// (anything under pkg/ outside pkg/local) reaches pkg/local, directly or
// through another package: the harness must never ship in a bootstrap.
// Test files may use the harness; they are not linked into a function. Nor
// may product code link the receivers' library (receiverLibrary).
func TestProductNeverImportsLocal(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", "../../functions/...", "../../pkg/...").Output()
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
		if isLocal(p.ImportPath) || strings.Contains(p.ImportPath, "/testdata/") || strings.HasPrefix(p.ImportPath, module+"scripts/") {
			continue
		}
		checked++
		for _, d := range p.Deps {
			if isLocal(d) {
				t.Errorf("%s imports %s: product code must not depend on the local harness", strings.TrimPrefix(p.ImportPath, module), strings.TrimPrefix(d, module))
			}
			if strings.HasPrefix(d, receiverLibrary) {
				t.Errorf("%s imports %s: the receivers' library is for tests only", strings.TrimPrefix(p.ImportPath, module), d)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d product packages; the go list pattern no longer finds them", checked)
	}
}

func isLocal(path string) bool {
	return path == module+"pkg/local" || strings.HasPrefix(path, module+"pkg/local/")
}
