package providertest

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// SenderModules returns .cache/senders/node_modules: the senders' npm
// libraries of scripts/senders (every dependency of its package.json), which
// scripts/install-verifiers.sh senders installs and `make emulators` runs.
// Provider tests check hookpack's senders with them. Without node or one of
// the libraries it skips t on a developer machine and fails it under
// CI=true, saying how to install them.
func SenderModules(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	dir := filepath.Join(root, ".cache", "senders", "node_modules")
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if deps, err := dependencies(filepath.Join(root, "scripts", "senders", "package.json")); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range deps {
			if _, err := os.Stat(filepath.Join(dir, p, "package.json")); err != nil {
				missing = dir + " has no " + p
				break
			}
		}
	}
	if missing != "" {
		msg := "the senders' npm libraries are not installed (" + missing + "): run scripts/install-verifiers.sh senders (make emulators does)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// ScriptsDir is the repository's scripts directory.
func ScriptsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts")
}

// NodeScript writes src as dir/name next to a node_modules link to modules,
// so that node resolves the libraries from it, and returns its path.
func NodeScript(modules, dir, name string, src []byte) (string, error) {
	link := filepath.Join(dir, "node_modules")
	if _, err := os.Lstat(link); errors.Is(err, os.ErrNotExist) {
		if err := os.Symlink(modules, link); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, src, 0o644)
}

// dependencies returns the names of the dependencies package.json lists.
func dependencies(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(pkg.Dependencies))
	for n := range pkg.Dependencies {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}
