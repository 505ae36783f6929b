// Package render renders a CloudFormation template the way CloudFormation
// will see it, through scripts/template/render.py (cfn-lint's own pipeline:
// the SAM transform for template.yaml, template-tenant.yaml passed
// through). The deploy rehearsal, the chaos run's IAM check and the
// template and sample tests all read templates this way.
//
// A render starts the SAM translator: seconds of CPU. So a template is
// rendered once per process while its bytes are unchanged and, when
// HOOKPACK_RENDER_CACHE names a directory (scripts/testenv sets one for
// make test's run), once per run: the first process to render it leaves
// the JSON there for the others.
package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// CacheEnv names the directory renders are shared through, across the
// processes of one run.
const CacheEnv = "HOOKPACK_RENDER_CACHE"

// scriptPath is render.py's path under the module root.
var scriptPath = filepath.Join("scripts", "template", "render.py")

// JSON returns the template at path (absolute, or relative to root, the
// module root, itself absolute or relative to the working directory)
// rendered as CloudFormation JSON. A failed render is not cached.
func JSON(ctx context.Context, root, path string) ([]byte, error) {
	// render.py runs in root: a relative root would name it from there.
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	file := path
	if !filepath.IsAbs(file) {
		file = filepath.Join(root, path)
	}
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", path, err)
	}
	script := filepath.Join(root, scriptPath)
	code, err := os.ReadFile(script)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", path, err)
	}
	sum := sha256.New()
	for _, part := range [][]byte{[]byte(file), src, code} {
		fmt.Fprintf(sum, "%d:", len(part))
		sum.Write(part)
	}
	key := hex.EncodeToString(sum.Sum(nil))

	rendered.Lock()
	out, ok := rendered.m[key]
	rendered.Unlock()
	if ok {
		return out, nil
	}
	dir := os.Getenv(CacheEnv)
	if dir != "" {
		if out, err := os.ReadFile(filepath.Join(dir, key+".json")); err == nil {
			remember(key, out)
			return out, nil
		}
	}
	cmd := exec.CommandContext(ctx, "python3", script, file)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("render %s: %w: %s", path, err, strings.TrimSpace(stderr.String()))
	}
	remember(key, out)
	if dir != "" {
		// Written whole under a temporary name, then renamed: a process
		// reading the cache sees a render or none.
		if f, err := os.CreateTemp(dir, key+".*"); err == nil {
			_, werr := f.Write(out)
			if cerr := f.Close(); werr == nil && cerr == nil {
				_ = os.Rename(f.Name(), filepath.Join(dir, key+".json"))
			}
			_ = os.Remove(f.Name())
		}
	}
	return out, nil
}

func remember(key string, out []byte) {
	rendered.Lock()
	rendered.m[key] = out
	rendered.Unlock()
}

// rendered holds this process's renders by key (the file's path, its
// bytes and render.py's). Callers get the shared slice and must not
// change it.
var rendered = struct {
	sync.Mutex
	m map[string][]byte
}{m: map[string][]byte{}}
