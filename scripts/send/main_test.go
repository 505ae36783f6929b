package main

import (
	"net/http"
	"net/http/httptest"
	"os"
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
	if err := run("stripe", "", srv.URL, "demo", "events/tenants.json"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].URL.Path != "/webhooks/demo/stripe" || !strings.HasPrefix(got[0].Header.Get("Stripe-Signature"), "t=") {
		t.Fatalf("requests = %+v, want one signed POST to /webhooks/demo/stripe", got)
	}
	for _, tt := range []struct{ prov, name, want string }{
		{"", "", "PROVIDER is required"},
		{"stripe", "nope", "no sample"},
	} {
		if err := run(tt.prov, tt.name, srv.URL, "demo", "events/tenants.json"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q, %q) = %v, want %q", tt.prov, tt.name, err, tt.want)
		}
	}
}
