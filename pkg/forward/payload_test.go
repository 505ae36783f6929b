package forward_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/forward"
)

func TestPayload(t *testing.T) {
	form := "application/x-www-form-urlencoded"
	tests := []struct {
		name        string
		body        string
		contentType string
		wantType    string
		wantForm    map[string]any // nil: no "form" member
		asIs        bool
	}{
		{name: "JSON object as is", body: `{"id":"evt_1"}`, contentType: "application/json; charset=utf-8", wantType: "application/json; charset=utf-8", asIs: true},
		{name: "JSON array as is", body: `[{"id":1},{"id":2}]`, contentType: "application/json", wantType: "application/json", asIs: true},
		{name: "JSON with surrounding whitespace as is", body: "{\"a\":1}\n", contentType: "application/json", wantType: "application/json", asIs: true},
		{name: "JSON without a content type", body: `{"a":1}`, wantType: "application/json", asIs: true},
		{name: "JSON labelled as text stays as is", body: `"hello"`, contentType: "text/plain", wantType: "text/plain", asIs: true},
		{name: "Twilio-style form", body: "ToCountry=US&Body=Hello+there%21&NumMedia=0", contentType: form,
			wantType: "application/json", wantForm: map[string]any{"ToCountry": "US", "Body": "Hello there!", "NumMedia": "0"}},
		{name: "form with a charset", body: "a=1", contentType: "Application/X-WWW-Form-Urlencoded; charset=UTF-8",
			wantType: "application/json", wantForm: map[string]any{"a": "1"}},
		{name: "repeated names become arrays in the order sent", body: "tag=b&x=1&tag=a&tag=c", contentType: form,
			wantType: "application/json", wantForm: map[string]any{"tag": []any{"b", "a", "c"}, "x": "1"}},
		{name: "empty form", body: "", contentType: form, wantType: "application/json", wantForm: map[string]any{}},
		{name: "form that does not decode keeps raw only", body: "a=%zz", contentType: form, wantType: "application/json"},
		{name: "GitHub form with a JSON payload field", body: "payload=%7B%22zen%22%3A%22x%22%7D", contentType: form,
			wantType: "application/json", wantForm: map[string]any{"payload": `{"zen":"x"}`}},
		{name: "plain text", body: "hello", contentType: "text/plain", wantType: "application/json"},
		{name: "XML", body: "<a>1</a>", contentType: "application/xml", wantType: "application/json"},
		{name: "no body", body: "", wantType: "application/json"},
		{name: "JSON that is not UTF-8", body: "\"\xff\"", contentType: "application/json", wantType: "application/json"},
		{name: "JSON with a byte order mark", body: "\ufeff{}", contentType: "application/json", wantType: "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, typ, wrapped := forward.Payload([]byte(tt.body), tt.contentType)
			if typ != tt.wantType || wrapped == tt.asIs {
				t.Fatalf("Payload(%q, %q) type %q wrapped %v; want %q, %v", tt.body, tt.contentType, typ, wrapped, tt.wantType, !tt.asIs)
			}
			if tt.asIs {
				if string(got) != tt.body {
					t.Errorf("Payload(%q) = %q, want the body as is", tt.body, got)
				}
				return
			}
			var doc map[string]any
			if err := json.Unmarshal(got, &doc); err != nil {
				t.Fatalf("Payload(%q) = %q, not JSON: %v", tt.body, got, err)
			}
			var w forward.Wrapped
			if err := json.Unmarshal(got, &w); err != nil || string(w.Raw) != tt.body || w.ContentType != tt.contentType {
				t.Errorf("Payload(%q) = %s: raw %q, contentType %q, %v; want the body and %q back", tt.body, got, w.Raw, w.ContentType, err, tt.contentType)
			}
			if f, ok := doc["form"]; (tt.wantForm == nil) == ok || (ok && !reflect.DeepEqual(f, tt.wantForm)) {
				t.Errorf("Payload(%q) form = %v (present %v), want %v", tt.body, f, ok, tt.wantForm)
			}
		})
	}
}

// A form-bodied delivery arrives as the wrapped document, signed over what
// is sent, with the provider's content type in its own header.
func TestPostWrapsForm(t *testing.T) {
	now := time.Now()
	var got http.Header
	var gotBody []byte
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		gotBody, _ = io.ReadAll(r.Body)
	}))
	defer target.Close()
	c := forward.New(nil, func() time.Time { return now })
	for _, tt := range []struct{ contentType, wantOriginal string }{
		{"application/x-www-form-urlencoded", "application/x-www-form-urlencoded"},
		{"", "application/octet-stream"},
	} {
		req := forward.Request{
			URL: target.URL, ID: "msg_1", IdempotencyKey: "idem-1", Secrets: []string{vectorSecret},
			Body: []byte("Body=hi&From=%2B1555"), ContentType: tt.contentType,
			Headers: map[string]string{forward.HeaderOriginalContentType: "forged", "Content-Type": "forged"},
		}
		if err := c.Post(context.Background(), req); err != nil {
			t.Fatalf("Post() = %v", err)
		}
		verifyOfficial(t, got, gotBody, req.Secrets)
		want, _, _ := forward.Payload(req.Body, req.ContentType)
		if string(gotBody) != string(want) || got.Get("Content-Type") != "application/json" || got.Get(forward.HeaderOriginalContentType) != tt.wantOriginal {
			t.Errorf("target got %s (Content-Type %q, original %q); want %s, application/json, %q",
				gotBody, got.Get("Content-Type"), got.Get(forward.HeaderOriginalContentType), want, tt.wantOriginal)
		}
	}
	// A JSON body never carries the header, even when a caller sets it.
	req := forward.Request{URL: target.URL, ID: "msg_2", Secrets: []string{vectorSecret}, Body: []byte(`{}`),
		Headers: map[string]string{forward.HeaderOriginalContentType: "forged"}}
	if err := c.Post(context.Background(), req); err != nil || got.Get(forward.HeaderOriginalContentType) != "" || string(gotBody) != "{}" {
		t.Errorf("Post(JSON) = %v: body %s, original content type %q; want {} and none", err, gotBody, got.Get(forward.HeaderOriginalContentType))
	}
}

func ExamplePayload() {
	body, contentType, wrapped := forward.Payload([]byte("From=%2B15551234567&Body=Hi+there&MediaUrl=a&MediaUrl=b"), "application/x-www-form-urlencoded")
	fmt.Println(contentType, wrapped)
	fmt.Println(string(body))
	// Output:
	// application/json true
	// {"contentType":"application/x-www-form-urlencoded","form":{"Body":"Hi there","From":"+15551234567","MediaUrl":["a","b"]},"raw":"RnJvbT0lMkIxNTU1MTIzNDU2NyZCb2R5PUhpK3RoZXJlJk1lZGlhVXJsPWEmTWVkaWFVcmw9Yg=="}
}
