package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/receiver"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
)

// receiving.md: begin (docs/receiving.md shows this function verbatim)

// receive verifies a forward with the official Standard Webhooks library and
// hands its body to apply. It answers 204; 401 when the signature or the
// timestamp is wrong (a 4xx dead-letters the event: see "Answer" below); 503
// when apply fails (the event is retried).
func receive(wh *standardwebhooks.Webhook, apply func(idempotencyKey string, body []byte) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read body", http.StatusInternalServerError)
			return
		}
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		// body is the event's JSON or, with Hookpack-Original-Content-Type,
		// the document wrapping a form or another body: "form" holds a
		// form's fields, "raw" the provider's bytes (base64). Apply it once
		// per Idempotency-Key: a repeat carries the same key.
		if err := apply(r.Header.Get("Idempotency-Key"), body); err != nil {
			http.Error(w, "try again later", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// receiving.md: end

// testReceivingDoc runs the Go, Node and Python receivers of
// docs/receiving.md, as written there, over every captured forward: each is
// accepted (204), and a tampered body, a stale timestamp and a wrong secret
// are refused (401), while a rotation's second signature is accepted.
func testReceivingDoc(t *testing.T, root, modules, secret string, got []forwardOf) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "receiving.md"))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("docs_test.go")
	if err != nil {
		t.Fatal(err)
	}
	goBlock := codeBlock(t, doc, "go")
	if region := between(string(self), "// receiving.md: begin (docs/receiving.md shows this function verbatim)\n\n", "\n// receiving.md: end"); region != goBlock {
		t.Errorf("docs/receiving.md's Go receiver differs from receive in docs_test.go:\n%s\nwant:\n%s", goBlock, region)
	}

	t.Run("Go", func(t *testing.T) {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		apply := func(key string, body []byte) error {
			var w forward.Wrapped
			switch {
			case key == "":
				return errors.New("no Idempotency-Key")
			case !json.Valid(body):
				return errors.New("body is not JSON")
			case bytes.Contains(body, []byte(`"raw":`)) && (json.Unmarshal(body, &w) != nil || len(w.Raw) == 0):
				return errors.New("wrapped body does not decode")
			}
			return nil
		}
		srv := httptest.NewServer(receive(wh, apply))
		defer srv.Close()
		checkReceiver(t, srv.URL, secret, got)
	})
	t.Run("Node", func(t *testing.T) {
		dir := t.TempDir()
		script, err := receiver.Script(modules, dir, "receiver.mjs", []byte(codeBlock(t, doc, "js")))
		if err != nil {
			t.Fatal(err)
		}
		checkReceiver(t, serve(t, secret, "node", script), secret, got)
	})
	t.Run("Python", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("python3 is not on PATH: %v", err)
			}
			t.Skipf("python3 is not on PATH (set CI=true to make this fatal): %v", err)
		}
		script := filepath.Join(t.TempDir(), "receiver.py")
		if err := os.WriteFile(script, []byte(codeBlock(t, doc, "python")), 0o644); err != nil {
			t.Fatal(err)
		}
		checkReceiver(t, serve(t, secret, "python3", script), secret, got)
	})
}

// checkReceiver posts every forward to url, then variants of the first
// signed again, and checks the answers.
func checkReceiver(t *testing.T, url, secret string, got []forwardOf) {
	t.Helper()
	for _, f := range got {
		if code := send(t, url, f.Header, f.Body); code != http.StatusNoContent {
			t.Errorf("%s: receiver answered %d, want 204", f.sample, code)
		}
	}
	f := got[0]
	other := "whsec_" + "b3RoZXItc2VjcmV0LWZvci10ZXN0cw==" // "other-secret-for-tests"
	resign := func(body []byte, at time.Time, secrets ...string) http.Header {
		h := f.Header.Clone()
		sig, err := forward.Sign(h.Get("Webhook-Id"), at, body, secrets)
		if err != nil {
			t.Fatal(err)
		}
		h.Set("Webhook-Timestamp", fmt.Sprint(at.Unix()))
		h.Set("Webhook-Signature", sig)
		return h
	}
	now := time.Now()
	tampered := append(bytes.Clone(f.Body), ' ')
	for _, tt := range []struct {
		name string
		h    http.Header
		body []byte
		want int
	}{
		{"tampered body", f.Header, tampered, http.StatusUnauthorized},
		{"stale timestamp (the libraries allow 5 minutes)", resign(f.Body, now.Add(-10*time.Minute), secret), f.Body, http.StatusUnauthorized},
		{"wrong secret", resign(f.Body, now, other), f.Body, http.StatusUnauthorized},
		{"second signature of a rotation", resign(f.Body, now, other, secret), f.Body, http.StatusNoContent},
	} {
		if code := send(t, url, tt.h, tt.body); code != tt.want {
			t.Errorf("%s: receiver answered %d, want %d", tt.name, code, tt.want)
		}
	}
}

func send(t *testing.T, url string, h http.Header, body []byte) int {
	t.Helper()
	resp, _ := providertest.Send(t, http.MethodPost, url, h, body)
	return resp.StatusCode
}

// serve starts a receiver script with PORT and WEBHOOK_SECRET set and
// returns its URL once it accepts connections.
func serve(t *testing.T, secret, interpreter, script string) string {
	t.Helper()
	port, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, interpreter, script)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port), "WEBHOOK_SECRET="+secret)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(15 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		select {
		case <-exited:
			t.Fatalf("%s %s exited: %s", interpreter, filepath.Base(script), stderr.Bytes())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s does not listen on %s: %s", interpreter, filepath.Base(script), addr, stderr.Bytes())
		}
	}
}

// codeBlock returns the one fenced code block of lang in doc.
func codeBlock(t *testing.T, doc []byte, lang string) string {
	t.Helper()
	m := regexp.MustCompile("(?ms)^```"+regexp.QuoteMeta(lang)+"\n(.*?)^```$").FindAllSubmatch(doc, -1)
	if len(m) != 1 {
		t.Fatalf("docs/receiving.md has %d %s code blocks, want 1", len(m), lang)
	}
	return string(m[0][1])
}

func between(s, begin, end string) string {
	_, rest, _ := strings.Cut(s, begin)
	region, _, _ := strings.Cut(rest, end)
	return region
}
