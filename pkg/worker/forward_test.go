package worker_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/ledger"
	"github.com/hookpack/hookpack/pkg/tenant"
	"github.com/hookpack/hookpack/pkg/worker"
)

type fakeOutbound struct {
	out tenant.Outbound
	err error
}

func (f fakeOutbound) Get(context.Context, string) (tenant.Outbound, error) { return f.out, f.err }

type fakePoster struct {
	mu   sync.Mutex
	reqs []forward.Request
	err  error
}

func (p *fakePoster) Post(_ context.Context, r forward.Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, r)
	return p.err
}

func TestForward(t *testing.T) {
	good := tenant.Outbound{TargetURL: "https://acme.example/hooks", Secrets: []string{"whsec_c2VjcmV0"}, Timeout: "3s"}
	now := time.Now()
	tests := []struct {
		name       string
		outbound   fakeOutbound
		postErr    error
		wantPosts  int
		wantDLQ    string // reason substring when dead-lettered
		wantRetry  bool
		wantMinVis int32
	}{
		{name: "delivered", outbound: fakeOutbound{out: good}, wantPosts: 1},
		{name: "tenant without outbound configuration", outbound: fakeOutbound{err: tenant.ErrNotFound}, wantDLQ: "no outbound target configured for tenant acme"},
		{name: "empty target URL", outbound: fakeOutbound{out: tenant.Outbound{Secrets: good.Secrets}}, wantDLQ: "neither targetUrl nor destinations is set"},
		{name: "unusable timeout", outbound: fakeOutbound{out: tenant.Outbound{TargetURL: good.TargetURL, Secrets: good.Secrets, Timeout: "soon"}}, wantDLQ: `timeout "soon"`},
		{name: "credential store down", outbound: fakeOutbound{err: errors.New("ssm throttled")}, wantRetry: true},
		{name: "target rejects", outbound: fakeOutbound{out: good}, postErr: forward.Classify(422, nil, nil, now), wantPosts: 1, wantDLQ: "target rejected the event: answered 422"},
		{name: "target throttles", outbound: fakeOutbound{out: good}, postErr: forward.Classify(429, http.Header{"Retry-After": {"30"}}, nil, now), wantPosts: 1, wantRetry: true, wantMinVis: 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			p := &fakePoster{err: tt.postErr}
			f.reg.Handle(worker.Any, worker.Any, worker.Forward(tt.outbound, p))
			e := env("evt_1", "cus_1")
			e.Type = "invoice.paid"
			resp, _ := f.h.Handle(context.Background(), batch(t, e))
			if len(p.reqs) != tt.wantPosts {
				t.Fatalf("%d posts, want %d", len(p.reqs), tt.wantPosts)
			}
			if (len(resp.BatchItemFailures) == 1) != tt.wantRetry {
				t.Errorf("failures = %v, want retried=%v", failed(resp), tt.wantRetry)
			}
			if tt.wantRetry && f.sqs.visibility["rh-evt_1"] < tt.wantMinVis {
				t.Errorf("visibility = %d, want ≥ %d", f.sqs.visibility["rh-evt_1"], tt.wantMinVis)
			}
			if tt.wantDLQ != "" {
				if len(f.sqs.sent) != 1 || !strings.Contains(f.sqs.sent[0].msg.Attributes[worker.AttrReason], tt.wantDLQ) {
					t.Errorf("dead letters = %+v, want one with reason containing %q", f.sqs.sent, tt.wantDLQ)
				}
			} else if len(f.sqs.sent) != 0 {
				t.Errorf("unexpected dead letter: %+v", f.sqs.sent)
			}
			if tt.name != "delivered" {
				return
			}
			r := p.reqs[0]
			wantKey := ledger.Key{Tenant: "acme", Event: e.Key, Effect: worker.ForwardEffect}.IdempotencyKey()
			if r.URL != good.TargetURL || r.ID != forward.MessageID(e.Key) || r.IdempotencyKey != wantKey ||
				string(r.Body) != e.Body || r.ContentType != "application/json" || r.Timeout != 3*time.Second ||
				len(r.Secrets) != 1 || r.Headers["Hookpack-Event-Type"] != "invoice.paid" || r.Headers["Hookpack-Provider"] != "stripe" {
				t.Errorf("request = %+v", r)
			}
			// A redelivery does not post again.
			f.h.Handle(context.Background(), batch(t, e))
			if len(p.reqs) != 1 {
				t.Errorf("redelivery posted again (%d posts)", len(p.reqs))
			}
		})
	}
}

// The real client through the worker: an untrusted certificate is
// dead-lettered with its reason at once (not retried for the backoff
// schedule), and a CR/LF in a conversation id does not stop the delivery.
func TestForwardClassesEndToEnd(t *testing.T) {
	var got []http.Header
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = append(got, r.Header.Clone()) }))
	defer plain.Close()
	untrusted := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = append(got, r.Header.Clone()) }))
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0)
	untrusted.StartTLS()
	defer untrusted.Close()
	tests := []struct {
		name         string
		url          string
		conversation string
		wantDLQ      string
		wantHeader   string
	}{
		{name: "untrusted certificate", url: untrusted.URL, conversation: "cus_1", wantDLQ: "TLS certificate signed by an unknown authority"},
		{name: "CR/LF in the conversation", url: plain.URL, conversation: "cus_1\r\nX-Injected: 1", wantHeader: "cus_1  X-Injected: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			f := newFixture(t, nil)
			out := fakeOutbound{out: tenant.Outbound{TargetURL: tt.url, Secrets: []string{"whsec_c2VjcmV0"}}}
			f.reg.Handle(worker.Any, worker.Any, worker.Forward(out, forward.New(nil, nil)))
			e := env("evt_1", tt.conversation)
			resp, _ := f.h.Handle(context.Background(), batch(t, e))
			if len(resp.BatchItemFailures) != 0 {
				t.Errorf("failures = %v, want none (delivered or dead-lettered)", failed(resp))
			}
			if tt.wantDLQ != "" {
				if len(f.sqs.sent) != 1 || !strings.Contains(f.sqs.sent[0].msg.Attributes[worker.AttrReason], tt.wantDLQ) {
					t.Errorf("dead letters = %+v, want one with reason containing %q", f.sqs.sent, tt.wantDLQ)
				}
				return
			}
			if len(f.sqs.sent) != 0 || len(got) != 1 || got[0].Get("Hookpack-Conversation") != tt.wantHeader || got[0].Get("X-Injected") != "" {
				t.Errorf("dead letters %+v, target got %v; want one delivery with Hookpack-Conversation %q", f.sqs.sent, got, tt.wantHeader)
			}
		})
	}
}
