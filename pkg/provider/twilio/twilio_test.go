package twilio

import (
	"crypto/sha1" //nolint:gosec // Twilio signs with HMAC-SHA1
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Twilio's official vectors, from the Python helper library's
// RequestValidator tests (github.com/twilio/twilio-python,
// tests/unit/test_request_validator.py): auth token "12345", URL
// https://mycompany.com/myapp.php?foo=1&bar=2 and the parameters below.
const (
	docToken    = "12345"
	docURL      = "https://mycompany.com/myapp.php?foo=1&bar=2"
	docExpected = "RSOYDt4T1cUTdK1PDd93/VVr8B8="
	// Same URL with the default port 443 signed, and the http URL with :80.
	docWithPort443 = "kvajT1Ptam85bY51eRf/AJRuM3w="
	docHTTPWith80  = "0ZXoZLH/DfblKGATFgpif+LLRf4="
	// http URL with port 1234 signed as is.
	docHTTP1234 = "Zmvh+3yNM1Phv2jhDCwEM3q5ebU="
	// JSON body signed through bodySHA256.
	docBody     = `{"property": "value", "boolean": true}`
	docBodyHash = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
	docBodySig  = "a9nBmqA0ju/hNViExpshrM61xv4="
	// Repeated parameter names: Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234.
	docDuplicate = "IK+Dwps556ElfBT0I3Rgjkr1wJU="
)

func docParams() url.Values {
	return url.Values{
		"CallSid": {"CA1234567890ABCDE"},
		"Digits":  {"1234"},
		"From":    {"+14158675309"},
		"To":      {"+18005551212"},
		"Caller":  {"+14158675309"},
	}
}

func request(u, sig, body string) *webhook.Request {
	r := providertest.Request(map[string]string{"X-Twilio-Signature": sig}, body)
	r.URL = u
	return r
}

// sign is the X-Twilio-Signature of the documented construction: the URL
// followed by params, the sorted parameters each as name then value.
func sign(token, u, params string) string {
	return base64.StdEncoding.EncodeToString(providertest.MAC(sha1.New, token, u, params))
}

const apiURL = "https://abc123.execute-api.eu-west-1.amazonaws.com/webhooks/acme/twilio"

func TestContract(t *testing.T) {
	vectors := []providertest.Vector{
		{Name: "twilio-python form", Request: func() *webhook.Request { return request(docURL, docExpected, docParams().Encode()) },
			Config: webhook.Config{Secrets: []string{docToken}}, Headers: []string{"X-Twilio-Signature"}},
		{Name: "twilio-python JSON body", Request: func() *webhook.Request { return request(docURL+"&bodySHA256="+docBodyHash, docBodySig, docBody) },
			Config: webhook.Config{Secrets: []string{docToken}}, Headers: []string{"X-Twilio-Signature"}, URL: docURL + "&bodySHA256=" + docBodyHash},
		providertest.SampleVector(t, "twilio", "sms-received", "X-Twilio-Signature"),
	}
	replace := func(old, new string) func(*webhook.Request) {
		return func(r *webhook.Request) { r.Body = []byte(strings.ReplaceAll(string(r.Body), old, new)) }
	}
	otherURL := providertest.Change{Name: "other URL", Apply: func(r *webhook.Request) { r.URL = strings.Replace(r.URL, "acme", "globex", 1) }}
	const form = "Body=Hi&From=%2B15551234567&To=%2B15557654321&MessageSid=SM1&SmsStatus=received&Digits=1&Digits=1"
	batch := `[{"specversion":"1.0","type":"com.twilio.messaging.message.delivered","id":"EZ1","data":{"from":"+15559990000","to":"+15550001111"}},` +
		`{"specversion":"1.0","type":"com.twilio.messaging.inbound-message.received","id":"EZ2","data":{"from":"+15550001111","to":"+15559990000"}}]`
	for _, tt := range []struct {
		name, url, body string
		settings        map[string]string
		other           func(*webhook.Request)
		tampers         []providertest.Change
		malformed       []providertest.Change
	}{
		{"form", apiURL + "?foo=1&bar=%2B2", form, nil, replace("SM1", "SM2"),
			[]providertest.Change{otherURL, {Name: "tampered parameter", Apply: replace("Hi", "Ho")}, {Name: "extra parameter", Apply: replace("Body=", "Extra=1&Body=")}},
			[]providertest.Change{{Name: "form not URL-encoded", Apply: replace("Hi", "%zz")}}},
		{"custom domain", apiURL, form, map[string]string{"base_url": "https://hooks.example.com/api"}, replace("SM1", "SM2"), nil, nil},
		{"exact public URL", apiURL + "?foo=1", form, map[string]string{"url": "https://example.com/myapp.php"}, replace("SM1", "SM2"), nil, nil},
		{"JSON through bodySHA256", apiURL + "?bodySHA256=stale", batch, nil, replace("EZ", "EY"),
			[]providertest.Change{otherURL, {Name: "tampered JSON body", Apply: replace("EZ1", "EZ9")}},
			[]providertest.Change{
				{Name: "not JSON", Apply: providertest.Body("{")},
				{Name: "empty batch", Apply: providertest.Body("[]")},
				{Name: "trailing data", Apply: providertest.Body(`{"sid":"x"} x`)},
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			providertest.Run(t, providertest.Case{
				Provider:   Provider{},
				Request:    func() *webhook.Request { return request(tt.url, "", tt.body) },
				Settings:   tt.settings,
				Signature:  "X-Twilio-Signature",
				OtherEvent: tt.other,
				// Twilio's retries (connection overrides #rc=, Event Streams
				// redelivery) send the same request with the same
				// I-Twilio-Idempotency-Token (docs/providers/twilio.md).
				Retry:     providertest.Resent,
				Unsigned:  []string{"I-Twilio-Idempotency-Token"},
				Vectors:   vectors,
				Tampers:   tt.tampers,
				Malformed: tt.malformed,
			})
		})
	}
}

// TestSignBodyHash: signing a JSON body sets bodySHA256 in the URL and the
// query, replacing a stale value.
func TestSignBodyHash(t *testing.T) {
	q, _ := url.ParseQuery("foo=1&bar=2&bodySHA256=0")
	js := &webhook.Request{Method: http.MethodPost, Body: []byte(docBody), URL: docURL + "&bodySHA256=0", Query: q}
	if err := (Provider{}).Sign(js, webhook.Config{Secrets: []string{docToken}}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := js.Header.Get("X-Twilio-Signature"); got != docBodySig || js.URL != docURL+"&bodySHA256="+docBodyHash || js.Query.Get("bodySHA256") != docBodyHash {
		t.Errorf("Sign(json vector) = %q with URL %q, query %v; want %q with bodySHA256=%s", got, js.URL, js.Query, docBodySig, docBodyHash)
	}
}

// TestBaseURLMustMatch: a signature for a custom domain does not verify
// against the reconstructed URL.
func TestBaseURLMustMatch(t *testing.T) {
	req := request(apiURL, "", docParams().Encode())
	if err := (Provider{}).Sign(req, webhook.Config{Secrets: []string{docToken}, Settings: map[string]string{"base_url": "https://hooks.example.com/api"}}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := (Provider{}).Verify(req, webhook.Config{Secrets: []string{docToken}}, time.Time{}); !errors.Is(err, webhook.ErrInvalidSignature) {
		t.Errorf("Verify(without base_url) = %v, want %v", err, webhook.ErrInvalidSignature)
	}
}

func TestVerify(t *testing.T) {
	form := docParams().Encode()
	now := time.Now()
	tests := []struct {
		name    string
		secrets []string
		set     map[string]string
		url     string
		sig     string
		body    string
		want    error
	}{
		{"port in URL is removed (https)", []string{docToken}, nil, "https://mycompany.com:1234/myapp.php?foo=1&bar=2", docExpected, form, nil},
		{"default port is added (https)", []string{docToken}, nil, docURL, docWithPort443, form, nil},
		{"default port is added (http)", []string{docToken}, nil, "http://mycompany.com/myapp.php?foo=1&bar=2", docHTTPWith80, form, nil},
		{"explicit port kept (http)", []string{docToken}, nil, "http://mycompany.com:1234/myapp.php?foo=1&bar=2", docHTTP1234, form, nil},
		{"repeated parameters", []string{docToken}, nil, docURL, docDuplicate, "Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234", nil},
		{"base_url replaces the reconstructed origin", []string{docToken}, map[string]string{"base_url": "https://mycompany.com"}, "https://abc.execute-api.us-east-1.amazonaws.com/myapp.php?foo=1&bar=2", docExpected, form, nil},
		{"tampered form value", []string{docToken}, nil, docURL, docExpected, strings.Replace(form, "Digits=1234", "Digits=9999", 1), webhook.ErrInvalidSignature},
		{"extra parameter", []string{docToken}, nil, docURL, docExpected, form + "&Extra=1", webhook.ErrInvalidSignature},
		{"different url", []string{docToken}, nil, "https://mycompany.com/other.php?foo=1&bar=2", docExpected, form, webhook.ErrInvalidSignature},
		{"not base64", []string{docToken}, nil, docURL, "!!!", form, webhook.ErrInvalidSignature},
		{"bad form encoding", []string{docToken}, nil, docURL, docExpected, "a=%zz", webhook.ErrInvalidSignature},
		{"bad base_url", []string{docToken}, map[string]string{"base_url": "mycompany.com"}, docURL, docExpected, form, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Provider{}.Verify(request(tt.url, tt.sig, tt.body), webhook.Config{Secrets: tt.secrets, Settings: tt.set}, now)
			if !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q, %q) = %v, want %v", tt.url, tt.sig, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), docToken) {
				t.Errorf("Verify error %q leaks the auth token", err)
			}
		})
	}
}

func TestURLVariants(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"https://a.example/p?q=1", []string{"https://a.example/p?q=1", "https://a.example:443/p?q=1"}},
		{"http://a.example:8080/p", []string{"http://a.example:8080/p", "http://a.example/p"}},
		{"https://a.example", []string{"https://a.example", "https://a.example:443"}},
		{"https://[::1]/p", []string{"https://[::1]/p", "https://[::1]:443/p"}},
		{"https://[::1]:8443/p", []string{"https://[::1]:8443/p", "https://[::1]/p"}},
		{"no-scheme", []string{"no-scheme"}},
	}
	for _, tt := range tests {
		got := urlVariants(tt.in)
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("urlVariants(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEvents(t *testing.T) {
	tests := []struct {
		name     string
		token    string
		body     string
		wantID   string
		wantType string
		wantConv string
	}{
		// The idempotency token is not signed: traced, never the id.
		{"idempotency token is no id", "e7a7a9ae-0000-4c8b-a1b1-000000000001", "MessageSid=SM1&MessageStatus=delivered&From=%2B15550001111&To=%2B15559990000", "SM1:delivered", "message.delivered", "+15550001111|+15559990000"},
		{"status callback", "", "MessageSid=SM1&MessageStatus=delivered&From=%2B15550001111&To=%2B15559990000", "SM1:delivered", "message.delivered", "+15550001111|+15559990000"},
		{"inbound reply maps to the same conversation", "", "MessageSid=SM2&SmsStatus=received&From=%2B15559990000&To=%2B15550001111&Body=hi", "SM2:received", "message.received", "+15550001111|+15559990000"},
		{"voice with sequence number", "", "CallSid=CA1&CallStatus=completed&SequenceNumber=3&From=%2B1&To=%2B2", "CA1:completed:3", "call.completed", "+1|+2"},
		{"conversations event", "", "EventType=onMessageAdded&ConversationSid=CH1&MessageSid=IM1&Author=a", "IM1:onMessageAdded", "onMessageAdded", "CH1"},
		{"nothing to key on", "", "Foo=bar", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request(docURL, "", tt.body)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.token != "" {
				r.Header.Set("I-Twilio-Idempotency-Token", tt.token)
			}
			ev := providertest.WantEvent(t, Provider{}, r, webhook.Config{}, webhook.Event{ID: tt.wantID, Type: tt.wantType, Conversation: tt.wantConv})
			if string(ev.Body) != tt.body {
				t.Error("Events() changed the body")
			}
		})
	}
}

func TestEventsCloudEventsBatch(t *testing.T) {
	body := `[
 {"specversion":"1.0","type":"com.twilio.messaging.message.delivered","id":"EZ1","data":{"messageSid":"SM1","from":"+15559990000","to":"+15550001111"}},
 {"specversion":"1.0","type":"com.twilio.messaging.inbound-message.received","id":"EZ2","data":{"messageSid":"SM2","from":"+15550001111","to":"+15559990000"}}
]`
	evs, err := Provider{}.Events(request(docURL+"&bodySHA256=x", "", body), webhook.Config{})
	if err != nil || len(evs) != 2 {
		t.Fatalf("Events() = %d events, %v; want 2", len(evs), err)
	}
	for i, want := range []string{"EZ1", "EZ2"} {
		if evs[i].ID != want || evs[i].Conversation != "+15550001111|+15559990000" || !strings.HasPrefix(evs[i].Type, "com.twilio.messaging.") {
			t.Errorf("event %d = %+v", i, evs[i])
		}
		if other := []string{"EZ2", "EZ1"}[i]; !strings.Contains(string(evs[i].Body), want) || strings.Contains(string(evs[i].Body), other) {
			t.Errorf("event %d body is not its own CloudEvent: %s", i, evs[i].Body)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(docURL, docExpected, []byte(docParams().Encode()))
	f.Add(docURL+"&bodySHA256="+docBodyHash, docBodySig, []byte(docBody))
	f.Add("https://x:1/?bodySHA256=", "AAAA", []byte(""))
	f.Add("https://x/p?%62odySHA256=ab", "AAAA", []byte("a=1"))
	f.Add("https://h.example:443/twilio", sign("fuzz", "https://h.example/twilio", "a1a1b2"), []byte("a=1&b=2&a=1"))
	f.Add("https://h.example/twilio", sign("fuzz", "https://h.example:443/twilio", "a1a1b2"), []byte("a=1&b=2&a=1"))
	f.Add("https://h.example/twilio", sign("fuzz", "https://h.example/twilio", "a1b2"), []byte("a=1&b=2&a=1"))
	f.Add(docURL, sign("fuzz", docURL, "a1b2"), []byte("b=2&a=1"))
	f.Fuzz(func(t *testing.T, u, sig string, body []byte) {
		if err := (Provider{}).Verify(request(u, sig, string(body)), webhook.Config{Secrets: []string{"fuzz"}}, time.Now()); err == nil {
			params := []string{""}
			if _, ok := bodyHash(u); !ok {
				form, _ := url.ParseQuery(string(body))
				params = signedParams(form)
			}
			for _, v := range urlVariants(u) {
				for _, p := range params {
					if sign("fuzz", v, p) == strings.TrimSpace(sig) {
						return
					}
				}
			}
			t.Fatalf("Verify(%q, %q) = nil without the real signature", u, sig)
		}
	})
}

func FuzzEvents(f *testing.F) {
	f.Add([]byte(docParams().Encode()), "")
	f.Add([]byte("MessageSid=SM1&MessageStatus=sent&From=a&To=b"), "tok")
	f.Add([]byte(`[{"id":"EZ1","type":"t","data":{"from":"a","to":"b"}},3,null]`), "")
	f.Add([]byte(`{"sid":"x"}`), "tok")
	f.Add([]byte(`{"sid":"x","data":{"ConversationSid":"CH1"}} x`), "tok")
	f.Add([]byte(`[] x`), "tok")
	f.Add([]byte(`null`), "")
	f.Add([]byte("MessageSid=SM1&MessageStatus=sent&From=a&To=b&x=%zz"), "")
	f.Fuzz(func(t *testing.T, body []byte, token string) {
		r := request(docURL, "", string(body))
		r.Header.Set("I-Twilio-Idempotency-Token", token)
		evs, err := Provider{}.Events(r, webhook.Config{})
		if err != nil && !errors.Is(err, webhook.ErrMalformed) {
			t.Fatalf("Events() error %v does not wrap ErrMalformed", err)
		}
		for _, ev := range evs {
			if ev.ID == "" && ev.Body == nil {
				t.Fatal("Events() returned an event with neither id nor body")
			}
			if a, b, ok := strings.Cut(ev.Conversation, "|"); ok && b < a && !strings.Contains(b, "|") {
				t.Fatalf("conversation %q is not sorted", ev.Conversation)
			}
		}
	})
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

// TestExactPublicURL: a tenant whose Twilio console holds a public URL with
// its own path (a custom domain with a base-path mapping, a stage,
// "…/myapp.php") sets it as "url"; each of Twilio's published vectors then
// verifies although the request reached the function at the API Gateway URL.
func TestExactPublicURL(t *testing.T) {
	const api = "https://abc123.execute-api.us-east-1.amazonaws.com/webhooks/acme/twilio"
	form := docParams().Encode()
	tests := []struct {
		name, public, arrivedQuery, sig, body string
	}{
		{"form", "https://mycompany.com/myapp.php", "?foo=1&bar=2", docExpected, form},
		{"form, configured with its query", docURL, "?foo=1&bar=2", docExpected, form},
		{"default port signed (https)", "https://mycompany.com/myapp.php", "?foo=1&bar=2", docWithPort443, form},
		{"default port signed (http)", "http://mycompany.com/myapp.php", "?foo=1&bar=2", docHTTPWith80, form},
		{"explicit port (http)", "http://mycompany.com:1234/myapp.php", "?foo=1&bar=2", docHTTP1234, form},
		{"repeated parameters", "https://mycompany.com/myapp.php", "?foo=1&bar=2", docDuplicate, "Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234"},
		{"JSON through bodySHA256", "https://mycompany.com/myapp.php", "?foo=1&bar=2&bodySHA256=" + docBodyHash, docBodySig, docBody},
		{"connection overrides fragment", "https://mycompany.com/myapp.php#rc=3&rp=all", "?foo=1&bar=2", docExpected, form},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := webhook.Config{Secrets: []string{docToken}, Settings: map[string]string{"url": tt.public}}
			if err := (Provider{}).Verify(request(api+tt.arrivedQuery, tt.sig, tt.body), cfg, time.Now()); err != nil {
				t.Errorf("Verify(url %q) = %v, want nil", tt.public, err)
			}
			// Without the setting the reconstructed URL is not what Twilio signed.
			if err := (Provider{}).Verify(request(api+tt.arrivedQuery, tt.sig, tt.body), webhook.Config{Secrets: []string{docToken}}, time.Now()); !errors.Is(err, webhook.ErrInvalidSignature) {
				t.Errorf("Verify(no url) = %v, want %v", err, webhook.ErrInvalidSignature)
			}
		})
	}
	bad := []map[string]string{
		{"url": "mycompany.com/myapp.php"},
		{"url": "ftp://mycompany.com/x"},
		{"url": "https://user:pw@mycompany.com/x"},
		{"url": docURL, "base_url": "https://mycompany.com"},
	}
	for _, set := range bad {
		err := Provider{}.Verify(request(api, docExpected, form), webhook.Config{Secrets: []string{docToken}, Settings: set}, time.Now())
		if !errors.Is(err, webhook.ErrMisconfigured) || strings.Contains(err.Error(), "pw") {
			t.Errorf("Verify(settings %v) = %v, want %v naming no value", set, err, webhook.ErrMisconfigured)
		}
	}
}
