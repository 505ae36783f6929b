package local_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/hookpack/hookpack/"

// receiverLibrary is the official Standard Webhooks Go library, which the
// local harness's targets (devstack.VerifyForward) and the tests verify
// forwards with, as a tenant's endpoint would; no function links it.
const receiverLibrary = "github.com/standard-webhooks/standard-webhooks/"

// TestProductNeverImportsLocal fails when a Lambda main or a product package
// (anything under pkg/ outside pkg/local) reaches pkg/local, directly or
// through another package: the harness must never ship in a bootstrap.
// Test files may use the harness; they are not linked into a function. Nor
// may product code link the receivers' library (receiverLibrary).
func TestProductNeverImportsLocal(t *testing.T) {
	checked := 0
	for _, p := range list(t, "../../functions/...", "../../pkg/...") {
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

// TestAdapterTestsNeverImportLocal fails when the tests of a provider
// adapter, or of the webhook contract they implement, reach pkg/local: they
// need no emulator, and read their vectors from events/samples through
// providertest, so the product's own checks run without the harness.
func TestAdapterTestsNeverImportLocal(t *testing.T) {
	checked := 0
	for _, p := range list(t, "-test", "../../pkg/provider/...", "../../pkg/webhook/...") {
		checked++
		for _, d := range p.Deps {
			if isLocal(d) {
				t.Errorf("%s imports %s: adapter tests must not depend on the local harness", strings.TrimPrefix(p.ImportPath, module), strings.TrimPrefix(d, module))
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d adapter packages; the go list pattern no longer finds them", checked)
	}
}

type pkg struct {
	ImportPath string
	Deps       []string
}

// list runs go list -json with args and returns every package it reports
// (with -test, the test variants too).
func list(t *testing.T, args ...string) []pkg {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-json=ImportPath,Deps"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func isLocal(path string) bool {
	return path == module+"pkg/local" || strings.HasPrefix(path, module+"pkg/local/")
}
