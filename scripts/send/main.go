// Command send is `make send`: it posts a provider's own sample delivery
// (events/samples/<provider>/) to a running `make run`, re-signed now with
// the tenant's secret from the tenants file, and prints the answer — send
// it twice to see the duplicate, or a batched sample (WhatsApp) to see each
// item queued once.
//
//	make send PROVIDER=stripe                 # every stripe sample
//	make send PROVIDER=whatsapp SAMPLE=message-text
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
)

func main() {
	prov := flag.String("provider", "", "provider folder under events/samples")
	name := flag.String("sample", "", "sample name (default: every sample of the provider)")
	base := flag.String("url", "http://127.0.0.1:3000", "base URL of the running stack")
	id := flag.String("tenant", "demo", "tenant the samples are addressed to")
	tenants := flag.String("tenants", "events/tenants.json", "tenants file holding the tenant's secrets")
	flag.Parse()
	if err := run(*prov, *name, *base, *id, *tenants); err != nil {
		fmt.Fprintln(os.Stderr, "make send:", err)
		os.Exit(1)
	}
}

func run(prov, name, base, id, tenantsFile string) error {
	if prov == "" {
		return fmt.Errorf("PROVIDER is required (a folder of events/samples)")
	}
	t, err := devstack.LoadTenant(tenantsFile, id)
	if err != nil {
		return err
	}
	all, err := providertest.LoadSamples("events/samples")
	if err != nil {
		return err
	}
	var picked []providertest.Sample
	for _, s := range all {
		if s.Provider == prov && (name == "" || s.Name == name) {
			picked = append(picked, s)
		}
	}
	if len(picked) == 0 {
		return fmt.Errorf("no sample events/samples/%s/%s", prov, name)
	}
	evs, err := samples.Generate(picked, samples.Options{Tenant: id, Providers: t.Providers, Registry: provider.Registry(), Now: time.Now(), BaseURL: base})
	if err != nil {
		return err
	}
	for _, ev := range evs {
		p := ev.Payload
		u := base + p.RawPath
		if p.RawQueryString != "" {
			u += "?" + p.RawQueryString
		}
		body := []byte(p.Body)
		if p.IsBase64Encoded {
			body = ev.Sample.Body
		}
		req, err := http.NewRequest(p.RequestContext.HTTP.Method, u, bytes.NewReader(body))
		if err != nil {
			return err
		}
		for k, v := range p.Headers {
			if k != "host" && k != "content-length" && k != "x-forwarded-for" && k != "x-forwarded-proto" && k != "x-forwarded-port" {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("is `make run` running? %w", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		status := ""
		if s := resp.Header.Get("X-Hookpack-Status"); s != "" {
			status = " (" + s + ": the sender's own answer, the event is queued)"
		}
		fmt.Printf("%s %s → %d %s%s\n", req.Method, ev.File, resp.StatusCode, b, status)
	}
	return nil
}
