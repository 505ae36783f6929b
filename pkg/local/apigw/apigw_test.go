package apigw

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

var route = Route{Methods: []string{"GET", "POST"}, Path: "/webhooks/{tenant}/{provider}"}

func TestEvent(t *testing.T) {
	tests := []struct {
		name, ct, body string
		wantBase64     bool
	}{
		{"json is text", "application/json; charset=utf-8", `{"a":"é"}`, false},
		{"form is base64", "application/x-www-form-urlencoded", "Body=hi&From=%2B1", true},
		{"octets are base64", "application/octet-stream", "\x00\xff", true},
		{"vendor json is text", "application/vnd.api+json", `{}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "http://127.0.0.1:3000/webhooks/acme/github?x=1&x=2&y=%20", strings.NewReader(tt.body))
			r.Header.Set("Content-Type", tt.ct)
			r.Header.Add("X-Multi", "a")
			r.Header.Add("X-Multi", "b")
			r.Header.Set("Cookie", "c=1")
			params, ok := route.Match(r.URL.Path)
			if !ok {
				t.Fatal("route did not match")
			}
			ev, err := Event(r, route, params, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Version != "2.0" || ev.RouteKey != "POST /webhooks/{tenant}/{provider}" || ev.RawPath != "/webhooks/acme/github" {
				t.Errorf("event = %+v", ev)
			}
			if ev.RawQueryString != "x=1&x=2&y=%20" || ev.QueryStringParameters["x"] != "1,2" || ev.QueryStringParameters["y"] != " " {
				t.Errorf("query = %q %v", ev.RawQueryString, ev.QueryStringParameters)
			}
			if ev.Headers["x-multi"] != "a,b" || ev.Headers["host"] != "127.0.0.1:3000" || ev.Headers["cookie"] != "" || len(ev.Cookies) != 1 {
				t.Errorf("headers = %v cookies = %v", ev.Headers, ev.Cookies)
			}
			if ev.PathParameters["tenant"] != "acme" || ev.PathParameters["provider"] != "github" {
				t.Errorf("path parameters = %v", ev.PathParameters)
			}
			if ev.IsBase64Encoded != tt.wantBase64 {
				t.Fatalf("IsBase64Encoded = %v, want %v", ev.IsBase64Encoded, tt.wantBase64)
			}
			got := ev.Body
			if ev.IsBase64Encoded {
				b, _ := base64.StdEncoding.DecodeString(ev.Body)
				got = string(b)
			}
			if got != tt.body {
				t.Errorf("body = %q, want %q", got, tt.body)
			}
		})
	}
}

func TestRouteMatch(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"/webhooks/a/b", true}, {"/webhooks/a", false}, {"/webhooks/a/b/c", false}, {"/hooks/a/b", false}, {"/webhooks//b", false},
		{"/webhooks/a/b/", false}, {"//webhooks/a/b", false}, {"/webhooks/a//b", false}, {"webhooks/a/b", false}, {"/webhooks/a/", false},
	}
	for _, tt := range tests {
		if _, ok := route.Match(tt.path); ok != tt.ok {
			t.Errorf("Match(%q) = %v, want %v", tt.path, ok, tt.ok)
		}
	}
}

func TestServer(t *testing.T) {
	srv := httptest.NewServer(Server(route, func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 409, Headers: map[string]string{"retry-after": "3"}, Body: ev.PathParameters["tenant"]}, nil
	}, testTimeout, slog.New(slog.DiscardHandler)))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/webhooks/acme/github", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 409 || resp.Header.Get("Retry-After") != "3" || string(b) != "acme" {
		t.Errorf("response = %d %v %q", resp.StatusCode, resp.Header, b)
	}
	for _, tt := range []struct{ method, path string }{
		{"POST", "/elsewhere"},
		{"POST", "/webhooks/acme/github/"},
		{"POST", "/webhooks/acme//github"},
		{"PUT", "/webhooks/acme/github"},
		{"DELETE", "/webhooks/acme/github"},
		{"PATCH", "/webhooks/acme/github"},
	} {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || string(b) != `{"message":"Not Found"}` || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s = %d %q, want HTTP API's own 404 {\"message\":\"Not Found\"}", tt.method, tt.path, resp.StatusCode, b)
		}
	}
}

func TestParseRouteKeys(t *testing.T) {
	tests := []struct {
		name    string
		keys    []string
		want    []Route
		wantErr bool
	}{
		{"one path, two methods", []string{"GET /webhooks/{tenant}/{provider}", "POST /webhooks/{tenant}/{provider}"},
			[]Route{{Methods: []string{"GET", "POST"}, Path: "/webhooks/{tenant}/{provider}"}}, false},
		{"two paths", []string{"POST /a", "GET /b"}, []Route{{Methods: []string{"POST"}, Path: "/a"}, {Methods: []string{"GET"}, Path: "/b"}}, false},
		{"default route", []string{"$default"}, nil, true},
		{"any method", []string{"ANY /a"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRouteKeys(tt.keys)
			if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseRouteKeys(%q) = %v, %v; want %v (error %v)", tt.keys, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
