package samples

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
)

// Vector loads events/samples/<provider>/<name> as a vector of the provider
// contract suite: the sample verifies under its tenant config at its "at",
// and signing it again reproduces headers byte for byte. It fails t when the
// sample cannot be read.
func Vector(t testing.TB, provider, name string, headers ...string) providertest.Vector {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	s, err := LoadSample(filepath.Join(filepath.Dir(file), "..", "..", "..", "events", "samples"), provider, name)
	if err != nil {
		t.Fatal(err)
	}
	return providertest.Vector{Name: "sample " + name, Request: s.Request, Config: s.TenantConfig, At: s.Time(), Headers: headers}
}
