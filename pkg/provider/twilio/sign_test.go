package twilio

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/samples"
	"github.com/hookpack/hookpack/pkg/webhook"
)

const samplesDir = "../../../events/samples"

func TestSignVerifies(t *testing.T) {
	now := time.Unix(1700000000, 0)
	const apiURL = "https://abc123.execute-api.eu-west-1.amazonaws.com/webhooks/acme/twilio"
	form := "Body=Hi&From=%2B15551234567&To=%2B15557654321&MessageSid=SM1&SmsStatus=received&Digits=1&Digits=1"
	signing := webhook.Config{Secrets: []string{"new-token", "old-token"}}
	custom := webhook.Config{Secrets: signing.Secrets, Settings: map[string]string{"base_url": "https://hooks.example.com/api"}}
	tests := []struct {
		name   string
		url    string
		body   string
		sign   webhook.Config
		tamper func(*webhook.Request)
		verify webhook.Config
		want   error
	}{
		{"form round trip", apiURL, form, signing, nil, signing, nil},
		{"form with a query string", apiURL + "?foo=1&bar=%2B2", form, signing, nil, signing, nil},
		{"json body through bodySHA256", apiURL + "?bodySHA256=stale", `{"id":"EV1"}`, signing, nil, signing, nil},
		{"custom domain", apiURL, form, custom, nil, custom, nil},
		{"custom domain not configured on the verifier", apiURL, form, custom, nil, signing, webhook.ErrInvalidSignature},
		{"verifier lists the signing token second", apiURL, form, signing, nil, webhook.Config{Secrets: []string{"other", "new-token"}}, nil},
		{"signs with the first token, not the second", apiURL, form, signing, nil, webhook.Config{Secrets: []string{"old-token"}}, webhook.ErrInvalidSignature},
		{"tampered parameter", apiURL, form, signing, func(r *webhook.Request) { r.Body = []byte(strings.Replace(string(r.Body), "Hi", "Ho", 1)) }, signing, webhook.ErrInvalidSignature},
		{"other URL", apiURL, form, signing, func(r *webhook.Request) { r.URL = strings.Replace(r.URL, "acme", "globex", 1) }, signing, webhook.ErrInvalidSignature},
		{"tampered json body", apiURL + "?bodySHA256=x", `{"id":"EV1"}`, signing, func(r *webhook.Request) { r.Body = []byte(`{"id":"EV2"}`) }, signing, webhook.ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &webhook.Request{Method: http.MethodPost, Body: []byte(tt.body), URL: tt.url}
			if err := (Provider{}).Sign(req, tt.sign, now); err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			if tt.tamper != nil {
				tt.tamper(req)
			}
			err := Provider{}.Verify(req, tt.verify, now)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q, %q) = %v, want %v", req.URL, req.Header.Get("X-Twilio-Signature"), err, tt.want)
			}
		})
	}
}

func TestSignErrors(t *testing.T) {
	tests := []struct {
		name string
		url  string
		body string
		cfg  webhook.Config
		want error
	}{
		{"no secrets", docURL, "a=1", webhook.Config{}, webhook.ErrMisconfigured},
		{"relative URL", "/webhooks/acme/twilio", "a=1", webhook.Config{Secrets: []string{docToken}}, webhook.ErrMalformed},
		{"form not URL-encoded", docURL, "a=%zz", webhook.Config{Secrets: []string{docToken}}, webhook.ErrMalformed},
		{"bad base_url", docURL, "a=1", webhook.Config{Secrets: []string{docToken}, Settings: map[string]string{"base_url": "hooks.example.com"}}, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &webhook.Request{Method: http.MethodPost, Body: []byte(tt.body), URL: tt.url}
			if err := (Provider{}).Sign(req, tt.cfg, time.Now()); !errors.Is(err, tt.want) {
				t.Errorf("Sign() = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestSignReproducesVectors signs the sample delivery with its auth token
// and Twilio's helper-library vectors (form parameters; JSON body through
// bodySHA256), expecting their published X-Twilio-Signature.
func TestSignReproducesVectors(t *testing.T) {
	s, err := samples.LoadSample(samplesDir, "twilio", "sms-received")
	if err != nil {
		t.Fatal(err)
	}
	req := s.Request()
	want := req.Header.Get("X-Twilio-Signature")
	req.Header.Del("X-Twilio-Signature")
	if err := (Provider{}).Sign(req, s.TenantConfig, s.Time()); err != nil {
		t.Fatalf("Sign() = %v", err)
	}
	if got := req.Header.Get("X-Twilio-Signature"); got != want {
		t.Errorf("Sign(sample) = %q, want %q", got, want)
	}

	form := &webhook.Request{Method: http.MethodPost, Body: []byte(docParams().Encode()), URL: docURL}
	if err := (Provider{}).Sign(form, webhook.Config{Secrets: []string{docToken}}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := form.Header.Get("X-Twilio-Signature"); got != docExpected {
		t.Errorf("Sign(form vector) = %q, want %q", got, docExpected)
	}

	q, _ := url.ParseQuery("foo=1&bar=2&bodySHA256=0")
	js := &webhook.Request{Method: http.MethodPost, Body: []byte(docBody), URL: docURL + "&bodySHA256=0", Query: q}
	if err := (Provider{}).Sign(js, webhook.Config{Secrets: []string{docToken}}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := js.Header.Get("X-Twilio-Signature"); got != docBodySig || js.URL != docURL+"&bodySHA256="+docBodyHash || js.Query.Get("bodySHA256") != docBodyHash {
		t.Errorf("Sign(json vector) = %q with URL %q, query %v; want %q with bodySHA256=%s", got, js.URL, js.Query, docBodySig, docBodyHash)
	}
}

func TestWithBodyHash(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://a.example/p?bodySHA256=old", "https://a.example/p?bodySHA256=new"},
		{"https://a.example/p?x=%2B1&bodySHA256=old&y=2", "https://a.example/p?x=%2B1&bodySHA256=new&y=2"},
		{"https://a.example/p?bodySHA256=old#frag", "https://a.example/p?bodySHA256=new#frag"},
		{"https://a.example/p?xbodySHA256=old&bodySHA256", "https://a.example/p?xbodySHA256=old&bodySHA256=new"},
	}
	for _, tt := range tests {
		if got := withBodyHash(tt.in, "new"); got != tt.want {
			t.Errorf("withBodyHash(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
