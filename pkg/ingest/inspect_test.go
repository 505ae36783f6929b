package ingest

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/inspect"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// TestLogLineFindsEveryEventKey delivers every sample of every sender and
// checks that the ingest's one log line pairs each queued event's eventId
// (the id its sender shows, or the content hash standing for it) with the
// event's idempotency key, as scripts/inspect reads it (inspect.MatchLine):
// an operator holding the sender's id finds the event without the ingest
// writing anything more.
func TestLogLineFindsEveryEventKey(t *testing.T) {
	all, err := providertest.LoadSamples(providertest.SamplesDir())
	if err != nil {
		t.Fatal(err)
	}
	providers := map[string]bool{}
	for _, s := range all {
		t.Run(s.Provider+"/"+s.Name, func(t *testing.T) {
			u, err := url.Parse(s.URL)
			if err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(strings.Trim(u.Path, "/"), "/")
			tenantID := parts[len(parts)-2]
			now := fixedNow
			if s.At != 0 {
				now = time.Unix(s.At, 0)
			}
			clock := func() time.Time { return now }
			logs, q := &bytes.Buffer{}, &fakeQueue{}
			h := New(Config{
				Providers:        provider.Registry(),
				Tenants:          fakeTenants{m: map[string]tenant.Inbound{tenantID: {Providers: map[string]webhook.Config{s.Provider: s.TenantConfig}}}},
				Claims:           idempotency.NewMemory(idempotency.Options{Now: clock}),
				Queue:            q,
				QueueURLTemplate: "https://sqs.local/000/hookpack-{tenant}.fifo",
				Now:              clock,
				Logger:           slog.New(slog.NewJSONHandler(logs, nil)),
			})
			headers := map[string]string{}
			for k, v := range s.Headers {
				headers[strings.ToLower(k)] = v
			}
			req := apiRequest(s.Method, u.Path, headers, string(s.Body))
			req.RequestContext.DomainName = u.Host
			req.RawQueryString = u.RawQuery
			if len(s.Query) > 0 {
				v := url.Values{}
				for k, x := range s.Query {
					v.Set(k, x)
				}
				req.RawQueryString = v.Encode()
			}
			if resp, _ := h.Handle(context.Background(), req); resp.StatusCode != 200 {
				t.Fatalf("sample answered %d %s", resp.StatusCode, resp.Body)
			}
			line := bytes.TrimSpace(logs.Bytes())
			for _, m := range q.sent {
				env, err := envelope.Decode(m.Body)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, d := range inspect.MatchLine(line, tenantID, env.EventID) {
					found = found || d.Key == env.Key
				}
				if !found {
					t.Errorf("the log line does not pair eventId %q with key %q: %s", env.EventID, env.Key, line)
				}
				providers[s.Provider] = true
			}
		})
	}
	if len(providers) < 5 {
		t.Errorf("events of %d senders checked, want every sender's samples: %v", len(providers), providers)
	}
}
