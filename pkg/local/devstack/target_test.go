package devstack

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/forward"
	"github.com/hookpack/hookpack/pkg/tenant"
)

func TestVerifyForward(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rotated := "whsec_" + "b2xkLXNlY3JldA==" // "old-secret"
	body := []byte(`{"id":"evt_1"}`)
	signed := func(at time.Time, secrets ...string) http.Header {
		sig, err := forward.Sign("msg_1", at, body, secrets)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(forward.HeaderID, "msg_1")
		h.Set(forward.HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
		h.Set(forward.HeaderSignature, sig)
		return h
	}
	now := time.Now()
	tests := []struct {
		name    string
		h       http.Header
		body    []byte
		secrets []string
		ok      bool
	}{
		{"signed now", signed(now, secret), body, []string{secret}, true},
		{"the second of two secrets", signed(now, secret), body, []string{rotated, secret}, true},
		{"tampered body", signed(now, secret), []byte(`{"id":"evt_2"}`), []string{secret}, false},
		{"another secret", signed(now, rotated), body, []string{secret}, false},
		{"ten minutes old", signed(now.Add(-10*time.Minute), secret), body, []string{secret}, false},
		{"no headers", http.Header{}, body, []string{secret}, false},
		{"no secret", signed(now, secret), body, nil, false},
		{"unusable secret", signed(now, secret), body, []string{"whsec_%%%"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyForward(tt.h, tt.body, tt.secrets)
			if (err == nil) != tt.ok {
				t.Errorf("VerifyForward() = %v, want ok %v", err, tt.ok)
			}
			if err != nil && (strings.Contains(err.Error(), "MfKQ9r8") || strings.Contains(err.Error(), "b2xk")) {
				t.Errorf("VerifyForward() error %q names a secret", err)
			}
		})
	}
	if err := VerifyForward(http.Header{}, body, nil); !errors.Is(err, ErrNoSecret) {
		t.Errorf("VerifyForward(no secrets) = %v, want ErrNoSecret", err)
	}
}

// TestTargetControl steers a target through its control endpoint, as
// docs/development.md does, and checks the answers its forwards get.
func TestTargetControl(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	tgt := NewTarget(map[string]tenant.Outbound{"demo": {Secrets: []string{secret}}}, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(tgt)
	defer srv.Close()

	send := func(client *http.Client, event, conversation string) (*http.Response, error) {
		body := []byte(`{"id":"` + event + `"}`)
		sig, err := forward.Sign("msg_"+event, time.Now(), body, []string{secret})
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/tenants/demo/events", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{forward.HeaderID: "msg_" + event, forward.HeaderTimestamp: strconv.FormatInt(time.Now().Unix(), 10),
			forward.HeaderSignature: sig, "Idempotency-Key": "key-" + event, "Hookpack-Event-Id": event, "Hookpack-Conversation": conversation} {
			req.Header.Set(k, v)
		}
		return client.Do(req)
	}
	call := func(method, query string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+"/control"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	builtins := `[{"id":1,"rule":"marker=hookpack-demo-poison&status=422"},{"id":2,"rule":"marker=hookpack-demo-flaky&retry-after=1s&status=503&times=1"}]`
	steps := []struct {
		name          string
		method, query string // a control request; none when method is empty
		event, conv   string // else a forward
		code          int
		answer        string // the control's answer, or the forward's Retry-After
	}{
		{name: "the builtin rules", method: "GET", code: 200, answer: builtins},
		{name: "refuse an event", method: "POST", query: "?event=e1&status=400", code: 201, answer: `{"id":3,"rule":"event=e1&status=400"}`},
		{name: "the event refused", event: "e1", conv: "octo/a#1", code: 400},
		{name: "and again", event: "e1", conv: "octo/a#1", code: 400},
		{name: "another event applied", event: "e2", conv: "octo/a#1", code: 200},
		{name: "refuse a conversation", method: "POST", query: "?conversation=octo/dead%231&status=422", code: 201, answer: `{"id":4,"rule":"conversation=octo%2Fdead%231&status=422"}`},
		{name: "its event refused", event: "e3", conv: "octo/dead#1", code: 422},
		{name: "a misspelt filter adds nothing", method: "POST", query: "?evnt=e2&status=400", code: 400},
		{name: "remove the event's rule", method: "DELETE", query: "?id=3", code: 200},
		{name: "the event applied", event: "e1", conv: "octo/a#1", code: 200},
		{name: "no such rule", method: "DELETE", query: "?id=3", code: 404},
		{name: "limit the rate", method: "POST", query: "?rate=1/m", code: 201, answer: `{"id":5,"rule":"rate=1%2F1m0s"}`},
		{name: "the first in the minute", event: "e4", conv: "octo/b#2", code: 200},
		{name: "the second waits", event: "e5", conv: "octo/b#2", code: 429, answer: "60"},
		{name: "reset", method: "DELETE", code: 200, answer: builtins},
		{name: "the conversation applied", event: "e3", conv: "octo/dead#1", code: 200},
		{name: "another method", method: "PUT", code: 405},
	}
	for _, s := range steps {
		if s.method != "" {
			code, answer := call(s.method, s.query)
			if code != s.code || (s.answer != "" && answer != s.answer) {
				t.Fatalf("%s: %s /control%s = %d %s, want %d %s", s.name, s.method, s.query, code, answer, s.code, s.answer)
			}
			continue
		}
		resp, err := send(http.DefaultClient, s.event, s.conv)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != s.code || resp.Header.Get("Retry-After") != s.answer {
			t.Fatalf("%s: forward %s = %d, Retry-After %q, want %d, %q", s.name, s.event, resp.StatusCode, resp.Header.Get("Retry-After"), s.code, s.answer)
		}
	}
	var got []string
	for _, a := range tgt.Applied() {
		got = append(got, a.EventID)
	}
	if want := []string{"e2", "e1", "e4", "e3"}; !slices.Equal(got, want) {
		t.Errorf("applied %v, want %v", got, want)
	}

	// A held answer: the sender gives up first, and the target applies
	// the forward all the same, as a slow service does.
	if code, answer := call("POST", "?event=e6&hang=10s"); code != 201 {
		t.Fatalf("POST /control?event=e6&hang=10s = %d %s", code, answer)
	}
	start := time.Now()
	if resp, err := send(&http.Client{Timeout: 300 * time.Millisecond}, "e6", "octo/c#3"); err == nil {
		resp.Body.Close()
		t.Fatalf("forward e6 under hang=10s answered %d at once", resp.StatusCode)
	}
	for !slices.ContainsFunc(tgt.Applied(), func(a Applied) bool { return a.EventID == "e6" }) && time.Since(start) < 5*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	if !slices.ContainsFunc(tgt.Applied(), func(a Applied) bool { return a.EventID == "e6" }) {
		t.Errorf("e6, held and given up by its sender, was not applied")
	}
}

// TestTargetDestinations checks that the target verifies a forward with the
// secrets of the destination its Hookpack-Destination header names, and
// records the destination of what it applied.
func TestTargetDestinations(t *testing.T) {
	const billing, audit = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_dGVzdC1hY21lLW91dGJvdW5kLXNlY3JldC0x"
	tgt := NewTarget(map[string]tenant.Outbound{
		"relay": {Destinations: []tenant.Destination{{Name: "billing", Secrets: []string{billing}}, {Name: "audit", Secrets: []string{audit}}}},
		"demo":  {TargetURL: "http://x", Secrets: []string{audit}},
	}, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(tgt)
	defer srv.Close()
	tests := []struct {
		name, tenant, dest, secret string
		code                       int
	}{
		{"billing with its secret", "relay", "billing", billing, 200},
		{"audit with its secret", "relay", "audit", audit, 200},
		{"billing with audit's secret", "relay", "billing", audit, 401},
		{"no such destination", "relay", "crm", billing, 401},
		{"no destination named", "relay", "", billing, 401},
		{"a legacy targetUrl", "demo", "", audit, 200},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(`{"id":"e"}`)
			id := strconv.Itoa(i)
			sig, err := forward.Sign("msg_"+id, time.Now(), body, []string{tt.secret})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/tenants/"+tt.tenant+"/events", bytes.NewReader(body))
			for k, v := range map[string]string{forward.HeaderID: "msg_" + id, forward.HeaderTimestamp: strconv.FormatInt(time.Now().Unix(), 10),
				forward.HeaderSignature: sig, "Idempotency-Key": "key-" + id, "Hookpack-Event-Id": "e" + id, "Hookpack-Destination": tt.dest} {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.code {
				t.Fatalf("forward = %d, want %d", resp.StatusCode, tt.code)
			}
			applied := tgt.Applied()
			if tt.code == 200 && (len(applied) == 0 || applied[len(applied)-1].Destination != tt.dest) {
				t.Errorf("applied %+v, want its last at destination %q", applied, tt.dest)
			}
		})
	}
}

func TestPerSecond(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	at := func(ms ...int) []Applied {
		var out []Applied
		for _, m := range ms {
			out = append(out, Applied{At: t0.Add(time.Duration(m) * time.Millisecond)})
		}
		return out
	}
	tests := []struct {
		name    string
		applied []Applied
		want    []int
	}{
		{"none", nil, nil},
		{"one", at(0), []int{1}},
		{"a burst, then the rate", at(0, 10, 200, 900, 1100, 1500), []int{4, 2}},
		{"a quiet second", at(0, 2100), []int{1, 0, 1}},
	}
	for _, tt := range tests {
		if got := PerSecond(tt.applied); !slices.Equal(got, tt.want) {
			t.Errorf("%s: PerSecond() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
