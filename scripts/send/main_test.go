package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

func TestSendPostsSignedSamples(t *testing.T) {
	if err := os.Chdir(awstest.ModuleRoot()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		_, _ = w.Write([]byte(`{"status":"accepted"}`))
	}))
	defer srv.Close()
	var out, errs bytes.Buffer
	if code := run([]string{"-provider", "stripe", "-url", srv.URL}, &out, &errs); code != 0 {
		t.Fatalf("send -provider stripe = %d: %s", code, errs.String())
	}
	if len(got) != 1 || got[0].URL.Path != "/webhooks/demo/stripe" || !strings.HasPrefix(got[0].Header.Get("Stripe-Signature"), "t=") {
		t.Fatalf("requests = %+v, want one signed POST to /webhooks/demo/stripe", got)
	}
	if !strings.Contains(out.String(), "→ 200") {
		t.Errorf("send printed %q, want the answer", out.String())
	}
}

// TestSendRefuses: bad usage exits 2 and lists what there is to send; a
// stack that does not answer is a failure (1).
func TestSendRefuses(t *testing.T) {
	if err := os.Chdir(awstest.ModuleRoot()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no provider", nil, 2, []string{"PROVIDER is required, one of", "github", "stripe", "zoom"}},
		{"unknown provider", []string{"-provider", "nope"}, 2, []string{`no sender "nope"`, "the senders are asana, ", "shopify", "stripe", "zoom"}},
		{"unknown sample", []string{"-provider", "stripe", "-sample", "nope"}, 2, []string{`no sample "nope" of stripe; its samples are customer-created`}},
		{"no stack", []string{"-provider", "stripe", "-url", "http://127.0.0.1:1"}, 1, []string{"is `make run` running?"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			code := run(tt.args, &out, &errs)
			if code != tt.code {
				t.Errorf("send %s = %d, want %d (%s)", strings.Join(tt.args, " "), code, tt.code, errs.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(errs.String(), w) {
					t.Errorf("send %s: stderr %q, want %q in it", strings.Join(tt.args, " "), errs.String(), w)
				}
			}
		})
	}
}

// TestMakeSendUnknownProvider: make send PROVIDER=nope lists the senders
// and fails with the command's status 2 (make's "Error 2"; make itself
// exits 2 for any failing recipe).
func TestMakeSendUnknownProvider(t *testing.T) {
	cmd := exec.Command("make", "-s", "--no-print-directory", "send", "PROVIDER=nope")
	cmd.Dir = awstest.ModuleRoot()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("make send PROVIDER=nope = %v, want exit status 2:\n%s", err, out)
	}
	for _, w := range []string{`no sender "nope"`, "the senders are asana, ", "stripe", "] Error 2"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("make send PROVIDER=nope says\n%s\nwant %q in it", out, w)
		}
	}
}
