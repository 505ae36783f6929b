package providertest

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Post signs req with s under cfg, now, and posts it to url as the
// provider's servers would, for the tests that drive a running stack
// rather than a scheme: it returns the answer's status and body, and leaves
// req signed (its headers hold the signature). It fails t when signing or
// the request fails.
func Post(t testing.TB, url string, s webhook.Signer, req *webhook.Request, cfg webhook.Config) (int, string) {
	t.Helper()
	if err := s.Sign(req, cfg, time.Now()); err != nil {
		t.Fatalf("Sign() = %v", err)
	}
	hr, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(req.Body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header = req.Header.Clone()
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
