// Command send is `make send`: it posts a provider's own sample delivery
// (events/samples/<provider>/) to a running `make run`, re-signed now with
// the tenant's secret from the tenants file, and prints the answer — send
// it twice to see the duplicate, or a batched sample (WhatsApp) to see each
// item queued once. Without PROVIDER, or with one that has no samples, it
// lists the senders (exit status 2); a send that fails exits 1.
//
//	make send PROVIDER=stripe                 # every stripe sample
//	make send PROVIDER=whatsapp SAMPLE=message-text
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
)

// usageError is bad usage: no provider, or a provider or sample without
// samples; the message lists the ones there are.
type usageError string

func (e usageError) Error() string { return string(e) }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command; it returns its exit status: 0 sent (whatever the
// answers), 1 a send or a file failed, 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.SetOutput(stderr)
	prov := fs.String("provider", "", "provider folder under events/samples")
	name := fs.String("sample", "", "sample name (default: every sample of the provider)")
	base := fs.String("url", "http://127.0.0.1:3000", "base URL of the running stack")
	id := fs.String("tenant", "demo", "tenant the samples are addressed to")
	tenants := fs.String("tenants", "events/tenants.json", "tenants file holding the tenant's secrets")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := send(stdout, *prov, *name, *base, *id, *tenants); err != nil {
		fmt.Fprintln(stderr, "make send:", err)
		if errors.As(err, new(usageError)) {
			return 2
		}
		return 1
	}
	return 0
}

func send(stdout io.Writer, prov, name, base, id, tenantsFile string) error {
	all, err := providertest.LoadSamples("events/samples")
	if err != nil {
		return err
	}
	var senders, names []string
	var picked []providertest.Sample
	for _, s := range all {
		if !slices.Contains(senders, s.Provider) {
			senders = append(senders, s.Provider)
		}
		if s.Provider == prov {
			names = append(names, s.Name)
			if name == "" || s.Name == name {
				picked = append(picked, s)
			}
		}
	}
	slices.Sort(senders)
	switch {
	case prov == "":
		return usageError("PROVIDER is required, one of " + strings.Join(senders, ", ") + " (make send PROVIDER=stripe [SAMPLE=…])")
	case len(names) == 0:
		return usageError(fmt.Sprintf("no sender %q under events/samples; the senders are %s", prov, strings.Join(senders, ", ")))
	case len(picked) == 0:
		return usageError(fmt.Sprintf("no sample %q of %s; its samples are %s", name, prov, strings.Join(names, ", ")))
	}
	t, err := devstack.LoadTenant(tenantsFile, id)
	if err != nil {
		return err
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
		fmt.Fprintf(stdout, "%s %s → %d %s%s\n", req.Method, ev.File, resp.StatusCode, b, status)
	}
	return nil
}
