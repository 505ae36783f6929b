package receiver

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
)

// ErrNotInstalled: Node.js or the npm verifiers are missing.
var ErrNotInstalled = errors.New("npm Standard Webhooks verifiers not installed: run scripts/install-verifiers.sh (make emulators does)")

// Delivery is one forward as the target received it.
type Delivery struct {
	Header http.Header
	Body   []byte
}

// Recorder is a tenant's target that keeps every delivery and answers 204.
// It is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	got     []Delivery
	arrived chan struct{} // closed and replaced on every delivery
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{arrived: make(chan struct{})} }

// ServeHTTP records the request's headers and body.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusInternalServerError)
		return
	}
	r.mu.Lock()
	r.got = append(r.got, Delivery{Header: req.Header.Clone(), Body: body})
	close(r.arrived)
	r.arrived = make(chan struct{})
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// Wait returns the deliveries once at least n arrived, or what arrived and
// ctx's error when it ends first.
func (r *Recorder) Wait(ctx context.Context, n int) ([]Delivery, error) {
	for {
		r.mu.Lock()
		got, arrived := append([]Delivery(nil), r.got...), r.arrived
		r.mu.Unlock()
		if len(got) >= n {
			return got, nil
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return got, fmt.Errorf("%d of %d deliveries arrived: %w", len(got), n, ctx.Err())
		}
	}
}

// NodeModules returns the node_modules directory of the verifiers
// installed under root (the module root): root/.cache/verifiers. It returns
// an error wrapping ErrNotInstalled when node or a package is missing.
func NodeModules(root string) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("%w (node is not on PATH)", ErrNotInstalled)
	}
	dir := filepath.Join(root, ".cache", "verifiers", "node_modules")
	for _, pkg := range []string{"standardwebhooks", "svix"} {
		if _, err := os.Stat(filepath.Join(dir, pkg, "package.json")); err != nil {
			return "", fmt.Errorf("%w (%s has no %s)", ErrNotInstalled, dir, pkg)
		}
	}
	return dir, nil
}

// Script writes src as dir/name next to a node_modules link to modules, so
// that its imports of "standardwebhooks" and "svix" resolve as in a
// receiver's own project. It returns the script's path.
func Script(modules, dir, name string, src []byte) (string, error) {
	return providertest.NodeScript(modules, dir, name, src)
}

//go:embed verify.mjs
var verifyScript []byte

// NodeResult is what each npm library's default verify call made of one
// delivery: "" when it returned, else the error it threw.
type NodeResult struct {
	StandardWebhooks string `json:"standardwebhooks"`
	Svix             string `json:"svix"`
}

// VerifyNode verifies every delivery with secret using `new
// Webhook(secret).verify(body, headers)` of the npm standardwebhooks and
// svix packages under modules (see NodeModules), in one node process. It
// returns one result per delivery, in order, or an error when node fails.
// scratch is a directory for the script.
func VerifyNode(ctx context.Context, modules, scratch, secret string, ds []Delivery) ([]NodeResult, error) {
	script, err := Script(modules, scratch, "verify.mjs", verifyScript)
	if err != nil {
		return nil, err
	}
	type delivery struct {
		Headers map[string]string `json:"headers"`
		Body    []byte            `json:"body"`
	}
	in := struct {
		Secret     string     `json:"secret"`
		Deliveries []delivery `json:"deliveries"`
	}{Secret: secret, Deliveries: make([]delivery, len(ds))}
	for i, d := range ds {
		h := make(map[string]string, len(d.Header))
		for k, v := range d.Header {
			h[strings.ToLower(k)] = strings.Join(v, ", ") // as Node's http module presents them
		}
		in.Deliveries[i] = delivery{Headers: h, Body: d.Body}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("node %s: %w: %s", filepath.Base(script), err, stderr.Bytes())
	}
	var out []NodeResult
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out) != len(ds) {
		return nil, fmt.Errorf("node %s printed %d results for %d deliveries: %v", filepath.Base(script), len(out), len(ds), err)
	}
	return out, nil
}
