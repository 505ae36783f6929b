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
	resp, b := Send(t, http.MethodPost, url, req.Header, req.Body)
	return resp.StatusCode, string(b)
}

// Send sends body with a copy of header (nil: none) to url and returns the
// answer, its body read and closed, and the body's bytes. It fails t when
// the request cannot be made or read.
func Send(t testing.TB, method, url string, header http.Header, body []byte) (*http.Response, []byte) {
	t.Helper()
	hr, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if header != nil {
		hr.Header = header.Clone()
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}
