package template

import (
	"slices"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/devstack"
)

// TestLocalAPIServesTheDeployedRoutes holds make run's HTTP API to the
// routes the template deploys: the same path and the same methods, so a
// method the template does not route gets HTTP API's 404 locally too.
func TestLocalAPIServesTheDeployedRoutes(t *testing.T) {
	api := render(t, "template.yaml").Resources["HttpApi"]
	body, _ := api.Properties["Body"].(map[string]any)
	paths, _ := body["paths"].(map[string]any)
	if len(paths) != 1 {
		t.Fatalf("HttpApi paths = %v, want exactly the webhook route", paths)
	}
	for path, ops := range paths {
		var methods []string
		for m := range ops.(map[string]any) {
			methods = append(methods, strings.ToUpper(m))
		}
		slices.Sort(methods)
		local := slices.Sorted(slices.Values(devstack.Route.Methods))
		if path != devstack.Route.Path || !slices.Equal(methods, local) {
			t.Errorf("template routes %v %s, local API routes %v %s", methods, path, local, devstack.Route.Path)
		}
	}
}
