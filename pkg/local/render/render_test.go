package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRoot is a module root whose render.py counts its runs in runs.log
// and prints the template's first line as JSON, or fails when the
// template says "fail".
func fakeRoot(t *testing.T) (root string, runs func() int) {
	t.Helper()
	root = t.TempDir()
	script := filepath.Join(root, scriptPath)
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(root, "runs.log")
	code := `import json, sys
with open(` + "'" + log + "'" + `, "a") as f:
    f.write("run\n")
src = open(sys.argv[1]).read().splitlines()[0]
if src == "fail":
    print("template says fail", file=sys.stderr)
    sys.exit(1)
json.dump({"first": src}, sys.stdout)
`
	if err := os.WriteFile(script, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, func() int {
		b, _ := os.ReadFile(log)
		return strings.Count(string(b), "run\n")
	}
}

// newProcess forgets this process's renders, as another test binary
// starts without them.
func newProcess() {
	rendered.Lock()
	rendered.m = map[string][]byte{}
	rendered.Unlock()
}

func write(t *testing.T, root, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestJSONRendersEachTemplateOncePerRun(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		cacheDir bool
		// steps: a template's content, or "" for another process.
		steps []string
		want  []string // JSON per content step
		runs  int
	}{
		{"one process renders an unchanged template once", false, []string{"a", "a"}, []string{`{"first": "a"}`, `{"first": "a"}`}, 1},
		{"a changed template renders again", false, []string{"a", "b"}, []string{`{"first": "a"}`, `{"first": "b"}`}, 2},
		{"without a cache directory each process renders", false, []string{"a", "", "a"}, []string{`{"first": "a"}`, `{"first": "a"}`}, 2},
		{"with one another process reads the first's render", true, []string{"a", "", "a"}, []string{`{"first": "a"}`, `{"first": "a"}`}, 1},
		{"the shared render is keyed by content", true, []string{"a", "", "b", "", "a"}, []string{`{"first": "a"}`, `{"first": "b"}`, `{"first": "a"}`}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			newProcess()
			root, runs := fakeRoot(t)
			dir := ""
			if c.cacheDir {
				dir = t.TempDir()
			}
			t.Setenv(CacheEnv, dir)
			var got []string
			for _, step := range c.steps {
				if step == "" {
					newProcess()
					continue
				}
				write(t, root, "template.yaml", step+"\n")
				out, err := JSON(ctx, root, "template.yaml")
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(out))
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("renders = %q, want %q", got, c.want)
			}
			if n := runs(); n != c.runs {
				t.Errorf("render.py ran %d times, want %d", n, c.runs)
			}
		})
	}
}

func TestJSONDoesNotKeepAFailedRender(t *testing.T) {
	ctx := context.Background()
	newProcess()
	root, runs := fakeRoot(t)
	dir := t.TempDir()
	t.Setenv(CacheEnv, dir)
	write(t, root, "bad.yaml", "fail\n")
	for i := 0; i < 2; i++ {
		_, err := JSON(ctx, root, filepath.Join(root, "bad.yaml"))
		if err == nil || !strings.Contains(err.Error(), "template says fail") {
			t.Fatalf("JSON(a failing template) = %v, want render.py's message", err)
		}
	}
	if n := runs(); n != 2 {
		t.Errorf("render.py ran %d times, want 2: a failure must not be cached", n)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("cache directory holds %d files after failures, want none", len(entries))
	}
	if _, err := JSON(ctx, root, "missing.yaml"); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("JSON(a missing template) = %v, want an error naming it", err)
	}
}

// A package's test names the module root relative to its directory
// (pkg/local/samples: "../../.."), and plain go test shares no render
// between processes: the render must not depend on either.
func TestJSONFromARelativeRoot(t *testing.T) {
	newProcess()
	root, runs := fakeRoot(t)
	t.Setenv(CacheEnv, "")
	pkg := filepath.Join(root, "pkg", "local", "samples")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	write(t, root, "template.yaml", "a\n")
	rel := filepath.Join("..", "..", "..")
	out, err := JSON(context.Background(), rel, "template.yaml")
	if err != nil {
		t.Fatalf("JSON(%q, template.yaml) from %s = %v, want a render", rel, pkg, err)
	}
	if string(out) != `{"first": "a"}` || runs() != 1 {
		t.Errorf("JSON(%q, template.yaml) = %s after %d runs of render.py, want {\"first\": \"a\"} after 1", rel, out, runs())
	}
}
