package samples_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const (
	root        = "../../.."
	samplesDir  = root + "/events/samples"
	tenantsFile = root + "/events/tenants.json"
	ingestDir   = root + "/events/ingest"
)

// handshakes are the samples IngestFunction answers instead of queuing.
var handshakes = map[string]bool{
	"slack-url-verification.json":    true,
	"whatsapp-verify-subscribe.json": true,
	"discord-ping.json":              true,
	"dropbox-verify-challenge.json":  true,
	"twitch-verification.json":       true,
	"zoom-url-validation.json":       true,
}

// demo returns the demo tenant's providers from the repository's tenants
// file.
func demo(t testing.TB) map[string]webhook.Config {
	t.Helper()
	f, err := tenant.LoadFile(tenantsFile, provider.Registry())
	if err != nil {
		t.Fatal(err)
	}
	d, ok := f.Tenants["demo"]
	if !ok {
		t.Fatalf("%s has no demo tenant", tenantsFile)
	}
	return d.Providers
}

// generate re-signs every sample for the demo tenant at now.
func generate(t testing.TB, now time.Time) []samples.Event {
	t.Helper()
	all, err := providertest.LoadSamples(samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := samples.Generate(all, samples.Options{
		Tenant: "demo", Providers: demo(t), Registry: provider.Registry(), Now: now,
	})
	if err != nil {
		t.Fatalf("Generate() = %v", err)
	}
	return evs
}

// toRequest rebuilds the provider-facing request from an API Gateway event
// the way the ingest handler does (canonical headers, raw query, decoded
// body, https://<host><rawPath>?<rawQuery>).
func toRequest(t testing.TB, ev events.APIGatewayV2HTTPRequest) *webhook.Request {
	t.Helper()
	h := http.Header{}
	for k, v := range ev.Headers {
		h[http.CanonicalHeaderKey(k)] = []string{v}
	}
	q, err := url.ParseQuery(ev.RawQueryString)
	if err != nil {
		t.Fatalf("rawQueryString %q: %v", ev.RawQueryString, err)
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			t.Fatalf("body: %v", err)
		}
	}
	scheme := h.Get("X-Forwarded-Proto")
	if scheme == "" {
		scheme = "https"
	}
	u := scheme + "://" + h.Get("Host") + ev.RawPath
	if ev.RawQueryString != "" {
		u += "?" + ev.RawQueryString
	}
	return &webhook.Request{
		Method: ev.RequestContext.HTTP.Method, Tenant: ev.PathParameters["tenant"], Provider: ev.PathParameters["provider"],
		Header: h, Query: q, Body: body, URL: u,
	}
}
