package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/local/awstest"
)

// TestInspectDestinationsOnTheLocalStack runs make run's pipeline for a
// tenant with two filtered destinations, one rated, and asks inspect about
// an event one of them took, an event no filter selects, and the tenant's
// summary: each destination's effect without -effects, filtered in the
// history, the rated destination's limiter, and never a URL or a secret.
func TestInspectDestinationsOnTheLocalStack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	got := map[string]int{} // path → deliveries
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		got[r.URL.Path]++
		mu.Unlock()
	}))
	defer srv.Close()
	count := func(path string) int { mu.Lock(); defer mu.Unlock(); return got[path] }

	// The demo tenant's senders, and destinations instead of its targetUrl.
	raw, err := os.ReadFile(filepath.Join(awstest.ModuleRoot(), "events", "tenants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tenants map[string]map[string]json.RawMessage `json:"tenants"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	const destSecret = "whsec_aW5zcGVjdC1kZXN0aW5hdGlvbnMtc2VjcmV0"
	outbound := `{"destinations": [
	  {"name": "billing", "url": "` + srv.URL + `/billing?token=URL-ONLY-MARKER", "secrets": ["` + destSecret + `"],
	   "filter": {"events": ["stripe:invoice.*"]}, "rate": "2/s", "burst": 1},
	  {"name": "ci", "url": "` + srv.URL + `/ci", "secrets": ["` + destSecret + `"], "filter": {"events": ["github:push"]}}]}`
	demo := file.Tenants["demo"]
	demo["outbound"] = json.RawMessage(outbound)
	b, err := json.Marshal(map[string]any{"tenants": map[string]any{"demo": demo}})
	if err != nil {
		t.Fatal(err)
	}
	tenants := filepath.Join(t.TempDir(), "tenants.json")
	if err := os.WriteFile(tenants, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, in := localStack(ctx, t, "id", tenants)

	post := func(id, typ string) {
		t.Helper()
		body := `{"id":"` + id + `","object":"event","type":"` + typ + `","data":{"object":{"id":"cus_1","note":"` + bodySecret + `"}}}`
		if code, resp, _ := postStripe(t, s.URL()+"/webhooks/demo/stripe", body); code != 200 {
			t.Fatalf("POST %s = %d %s", id, code, resp)
		}
	}
	idle := func() bool {
		sum, err := in.Summarize(ctx, "demo")
		return err == nil && sum.Queue.Visible+sum.Queue.InFlight+sum.Queue.Delayed == 0
	}
	post("evt_invoice", "invoice.paid")
	post("evt_filtered", "customer.updated")
	for deadline := time.Now().Add(30 * time.Second); count("/billing") < 1 || !idle(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for evt_invoice at billing")
		}
	}
	inspectOne := func(id string) (inspect.Journey, string) {
		t.Helper()
		js, err := in.Inspect(ctx, inspect.Query{Tenant: "demo", Event: id})
		if err != nil || len(js) != 1 {
			t.Fatalf("Inspect(%s) = %d journeys, %v; want one", id, len(js), err)
		}
		var out bytes.Buffer
		if err := inspect.WriteJourney(&out, js[0]); err != nil {
			t.Fatal(err)
		}
		t.Logf("inspect -tenant demo %s\n%s", id, out.String())
		b, _ := json.Marshal(js[0])
		for _, never := range []string{destSecret, "URL-ONLY-MARKER", srv.URL, bodySecret, stripeSecret} {
			if strings.Contains(out.String(), never) || bytes.Contains(b, []byte(never)) {
				t.Errorf("inspect %s shows %q (a secret, a URL or body content)", id, never)
			}
		}
		return js[0], out.String()
	}

	j, out := inspectOne("evt_invoice")
	var billing ledger.Status
	for _, e := range j.Effects {
		if e.Name == "forward:billing" {
			billing = e.Status
		}
	}
	if j.State != inspect.StateDone || billing != ledger.StatusInProgress || !strings.Contains(out, "forward:billing DONE") ||
		!strings.Contains(out, "forward:ci no record: not selected by its filter") {
		t.Errorf("evt_invoice: state %s, billing %q; want done, forward:billing DONE and forward:ci not selected", j.State, billing)
	}

	j, out = inspectOne("evt_filtered")
	if j.State != inspect.StateDone || !strings.Contains(j.Why, "filtered") || !strings.Contains(out, "filtered: no destination's filter selects it: message") {
		t.Errorf("evt_filtered: state %s (%s); want done, filtered, and the worker's filtered line in the history", j.State, j.Why)
	}
	if n := count("/billing") + count("/ci"); n != 1 {
		t.Errorf("%d deliveries, want 1 (evt_filtered goes nowhere)", n)
	}

	sum, err := in.Summarize(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := inspect.WriteSummary(&text, sum); err != nil {
		t.Fatal(err)
	}
	t.Logf("inspect -tenant demo -summary\n%s", text.String())
	if len(sum.Destinations) != 2 || sum.Destinations[0].Limiter == nil || sum.Destinations[0].Limiter.Idle || sum.Destinations[0].Limiter.NextSlot.IsZero() ||
		sum.Destinations[1].Limiter != nil || !strings.Contains(text.String(), "billing: 2/s, burst 1") || strings.Contains(text.String(), "URL-ONLY-MARKER") {
		t.Errorf("Summarize() = %+v; want billing's limiter read from the ledger table, ci unrated, no URL", sum.Destinations)
	}
	// With a scan: each destination's deliveries, from its records in the
	// ledger table.
	sum, err = in.SummarizeWith(ctx, "demo", inspect.SummaryOptions{Scan: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Destinations) != 2 || sum.Destinations[0].Deliveries == nil || *sum.Destinations[0].Deliveries != (inspect.Deliveries{Delivered: 1}) ||
		sum.Destinations[1].Deliveries == nil || *sum.Destinations[1].Deliveries != (inspect.Deliveries{}) {
		t.Errorf("SummarizeWith(scan) = %+v; want billing delivered 1, ci nothing", sum.Destinations)
	}
}
