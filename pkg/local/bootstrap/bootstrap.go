// Package bootstrap builds the functions' Lambda binaries (functions/<name>
// → <dir>/<name>/bootstrap) with make build's flags, for the harness and the
// tests that run the real binaries: one go build for every function (shared
// compilation, parallel links), once per process and target, and none when
// make has built them already (EnvDir).
package bootstrap

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// EnvDir names the environment variable holding a directory of bootstraps
// built for this machine (<dir>/<name>/bootstrap, what `make test` builds
// into bin/local before the tests start); ForHost uses them as they are.
const EnvDir = "HOOKPACK_BOOTSTRAP_DIR"

// Flags are make build's go build flags (the Makefile's LAMBDA_BUILD);
// every bootstrap build uses them with CGO_ENABLED=0, so all share one
// build cache entry per package and target.
var Flags = []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w"}

// Names returns the functions under root/functions (those with a main.go).
func Names(root string) ([]string, error) {
	mains, err := filepath.Glob(filepath.Join(root, "functions", "*", "main.go"))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(mains))
	for _, m := range mains {
		names = append(names, filepath.Base(filepath.Dir(m)))
	}
	return names, nil
}

// Build builds every function under root for goos/goarch into
// dir/<name>/bootstrap with one go build and returns the paths by function
// name. It returns the build's output with its error.
func Build(ctx context.Context, root, dir, goos, goarch string) (map[string]string, error) {
	names, err := Names(root)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no functions/*/main.go under %s", root)
	}
	out, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// go build -o <directory> writes one executable per main package,
	// named after its directory; each then moves to <name>/bootstrap.
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(out, ".build-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	args := append([]string{"build"}, Flags...)
	args = append(args, "-o", tmp+string(filepath.Separator))
	for _, n := range names {
		args = append(args, "./functions/"+n)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./functions/...: %w\n%s", err, strings.TrimSpace(string(b)))
	}
	bins := make(map[string]string, len(names))
	for _, n := range names {
		bin := filepath.Join(out, n, "bootstrap")
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(filepath.Join(tmp, n), bin); err != nil {
			return nil, err
		}
		bins[n] = bin
	}
	return bins, nil
}

var (
	mu    sync.Mutex
	built = map[string]*result{}
)

type result struct {
	once sync.Once
	bins map[string]string
	err  error
}

// ForHost returns every function's bootstrap for this machine: those in
// $HOOKPACK_BOOTSTRAP_DIR when it is set, else built into dir by Build the
// first time this process asks for dir (later calls, concurrent ones
// included, share that build).
func ForHost(ctx context.Context, root, dir string) (map[string]string, error) {
	if env := os.Getenv(EnvDir); env != "" {
		return existing(root, env)
	}
	mu.Lock()
	r, ok := built[dir]
	if !ok {
		r = &result{}
		built[dir] = r
	}
	mu.Unlock()
	r.once.Do(func() { r.bins, r.err = Build(ctx, root, dir, runtime.GOOS, runtime.GOARCH) })
	return r.bins, r.err
}

// existing returns dir/<name>/bootstrap for every function, failing when
// one is missing.
func existing(root, dir string) (map[string]string, error) {
	names, err := Names(root)
	if err != nil {
		return nil, err
	}
	bins := make(map[string]string, len(names))
	for _, n := range names {
		bin := filepath.Join(dir, n, "bootstrap")
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("%s=%s: %w (make test builds them; unset it to build here)", EnvDir, dir, err)
		}
		bins[n] = bin
	}
	return bins, nil
}
