package ingest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/logtest"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/queue"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// FuzzHandler drives the whole ingest handler (every provider of the local
// tenants file's "demo" tenant, in-memory claims and queue) with arbitrary
// requests, signed by the provider's own Signer when sign is set so that the
// parsers behind verification are reached too. Whatever comes in:
//   - the handler answers (no error, no panic) with a status a sender can act
//     on: never 5xx, since nothing here is down or misconfigured;
//   - an error answer is JSON saying what is wrong, and queued nothing but
//     the events it lists accepted (a 409 for an id repeated in the delivery
//     with another payload); a 4xx other than 409 also read and wrote no key;
//   - a 200 queued exactly the events it reports accepted, each with a
//     message group and a deduplication id, and the same request again
//     queues nothing more;
//   - the log holds no secret, no signature and no body.
func FuzzHandler(f *testing.F) {
	file, err := tenant.LoadFile(awstest.ModuleRoot()+"/events/tenants.json", provider.Registry())
	if err != nil {
		f.Fatal(err)
	}
	in := file.Tenants["demo"].Inbound
	all, err := providertest.LoadSamples(providertest.SamplesDir())
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range all {
		var hdrs strings.Builder
		for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
			hdrs.WriteString(k + ": " + s.Headers[k] + "\n")
		}
		query := ""
		for _, k := range slices.Sorted(maps.Keys(s.Query)) {
			query += "&" + k + "=" + s.Query[k]
		}
		f.Add(s.Provider, s.Method == "GET", hdrs.String(), strings.TrimPrefix(query, "&"), s.Body, true, false)
		f.Add(s.Provider, s.Method == "GET", hdrs.String(), "", s.Body, false, true)
	}
	f.Add("github", false, "X-GitHub-Event: push\nX-GitHub-Delivery: d\n", "", []byte(`{"a":1} trailing`), true, false)
	f.Add("stripe", false, "", "", []byte(`{"id":"evt_1","type":"t","data":[]}`), true, true)
	f.Add("nope", false, "", "", []byte(`{}`), true, false)

	f.Fuzz(func(t *testing.T, prov string, get bool, hdrs, query string, body []byte, sign, b64 bool) {
		logs := &logtest.Buffer{}
		q := &fakeQueue{}
		claims := &countingClaims{Memory: idempotency.NewMemory(idempotency.Options{Now: func() time.Time { return fixedNow }})}
		h := New(Config{
			Providers:        provider.Registry(),
			Tenants:          fakeTenants{m: map[string]tenant.Inbound{"demo": in}},
			Claims:           claims,
			Queue:            q,
			QueueURLTemplate: "https://sqs.local/000/hookpack-{tenant}.fifo",
			Now:              func() time.Time { return fixedNow },
			Logger:           slog.New(slog.NewJSONHandler(logs, nil)),
		})

		method := "POST"
		if get {
			method = "GET"
		}
		headers := map[string]string{}
		for line := range strings.Lines(hdrs) {
			if k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":"); ok {
				headers[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
		req := apiRequest(method, "/webhooks/demo/"+prov, headers, string(body))
		req.RawQueryString = query
		var signature []string // values Sign set: they must not be logged
		if p, ok := provider.Registry().Lookup(prov); ok && sign {
			cfg, _ := in.Provider(prov)
			if wreq, err := webhookRequest(&req, "demo", prov, body); err == nil {
				before := maps.Clone(wreq.Header)
				if err := p.(webhook.Signer).Sign(wreq, cfg, fixedNow); err == nil {
					req.Headers = map[string]string{}
					for k, v := range wreq.Header {
						req.Headers[strings.ToLower(k)] = v[0]
						if len(v[0]) >= 20 && !slices.Equal(before[k], v) {
							signature = append(signature, v[0])
						}
					}
				}
			}
		}
		if b64 {
			req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}

		resp, err := h.Handle(context.Background(), req)
		if err != nil {
			t.Fatalf("Handle() error = %v; the handler must answer every request", err)
		}
		check := func(resp events.APIGatewayV2HTTPResponse, queuedBefore, claimsBefore int) {
			t.Helper()
			queued := q.count() - queuedBefore
			var out struct {
				Error  string        `json:"error"`
				Events []eventResult `json:"events"`
			}
			isJSON := resp.Headers["content-type"] == "application/json" && json.Unmarshal([]byte(resp.Body), &out) == nil
			switch s := resp.StatusCode; {
			case s >= 500:
				t.Fatalf("status %d %s: nothing here is down or misconfigured", s, resp.Body)
			case s == 200 && resp.Headers["x-hookpack-status"] != "":
				// A provider's synchronous answer to a queued delivery
				// (Discord's deferred response): the outcome is in the header.
				if st := resp.Headers["x-hookpack-status"]; st == string(outAccepted) && queued == 0 || st == string(outDuplicate) && queued != 0 {
					t.Fatalf("answer with x-hookpack-status %s queued %d messages", st, queued)
				}
			case s == 200 && isJSON && len(out.Events) > 0:
				accepted := 0
				for _, e := range out.Events {
					if e.Outcome == outAccepted {
						accepted++
					}
				}
				if queued != accepted {
					t.Fatalf("200 reports %d events, %d accepted, and queued %d", len(out.Events), accepted, queued)
				}
			case s == 200, s == 204: // a handshake's reply (JSON for Discord's PONG and Zoom's validation)
				if queued != 0 {
					t.Fatalf("handshake reply queued %d messages", queued)
				}
			case s == 409 || s == 400 || s == 401 || s == 403 || s == 404 || s == 405 || s == 413:
				if !isJSON || out.Error == "" {
					t.Fatalf("status %d answers %q, want JSON with an error message", s, resp.Body)
				}
				accepted := 0
				for _, e := range out.Events {
					if e.Outcome == outAccepted {
						accepted++
					}
				}
				if queued != accepted {
					t.Fatalf("status %d queued %d messages, lists %d events accepted", s, queued, accepted)
				}
				if s != 409 && claims.checks+claims.completes != claimsBefore {
					t.Fatalf("status %d read or wrote %d keys", s, claims.checks+claims.completes-claimsBefore)
				}
			default:
				t.Fatalf("status %d %s is not one the handler documents", s, resp.Body)
			}
		}
		check(resp, 0, 0)
		for _, m := range q.sent {
			if m.GroupID == "" || m.DeduplicationID == "" || m.Size() > queue.MaxEventBytes {
				t.Fatalf("queued message without group or deduplication id, or over the limit: %q %q %d bytes", m.GroupID, m.DeduplicationID, m.Size())
			}
		}

		queued, claimed := q.count(), claims.checks+claims.completes
		again, _ := h.Handle(context.Background(), req)
		check(again, queued, claimed)
		if q.count() != queued {
			t.Fatalf("the same request again queued %d more messages (first answer %d %s)", q.count()-queued, resp.StatusCode, resp.Body)
		}

		// The log's values as written, JSON escapes undone (an escape can
		// both hide a secret and look like a body).
		values := logs.Values(t)
		leaks := func(s string) bool { return strings.Contains(values, s) }
		for name, cfg := range in.Providers {
			for _, s := range cfg.Secrets {
				if leaks(s) {
					t.Fatalf("log holds %s's secret: %s", name, logs)
				}
			}
		}
		for _, s := range signature {
			if leaks(s) {
				t.Fatalf("log holds signature %q: %s", s, logs)
			}
		}
		// (The log may name the path's provider and an event id from a
		// header or the query: a body that is one of those is no leak.)
		echoed := strings.Contains(prov, string(body)) || strings.Contains(hdrs, string(body)) || strings.Contains(query, string(body))
		if len(body) >= 32 && !echoed && leaks(string(body)) {
			t.Fatalf("log holds the body: %s", logs)
		}
	})
}
