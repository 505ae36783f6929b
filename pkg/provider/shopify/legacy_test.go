package shopify

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// legacyEvents is Events as it was when it decoded the body into a generic
// document (webhook.DecodeJSON, a json.Decoder) and read it with
// webhook.Field; FuzzEventsMatchLegacy holds the single-pass Events to it.
func legacyEvents(req *webhook.Request) ([]webhook.Event, error) {
	topic := header(req, "Topic")
	if topic == "" {
		return nil, webhook.Errorf(webhook.ErrMalformed, "X-Shopify-Topic header is required")
	}
	id := header(req, "Event-Id")
	if id == "" {
		id = header(req, "Webhook-Id")
	}
	if id == "" {
		return nil, webhook.Errorf(webhook.ErrMalformed, "X-Shopify-Event-Id or X-Shopify-Webhook-Id header is required")
	}
	doc, err := webhook.DecodeJSON(req.Body)
	if err != nil {
		return nil, err
	}
	field := func(path string) string {
		v, _ := webhook.Field(doc, path)
		return v
	}
	resource := func() string {
		if v, ok := webhook.Field(doc, "order_id"); ok && v != "" {
			return "Order/" + v
		}
		for _, gid := range []string{field("admin_graphql_api_id"), header(req, "Resource-Id")} {
			if r := strings.TrimPrefix(gid, "gid://shopify/"); r != gid && r != "" {
				if i := strings.IndexByte(r, '?'); i >= 0 {
					r = r[:i]
				}
				return r
			}
		}
		if v, ok := webhook.Field(doc, "id"); ok && v != "" {
			kind, _, _ := strings.Cut(topic, "/")
			return kind + "/" + v
		}
		return ""
	}
	shop := header(req, "Shop-Domain")
	conv := shop
	if r := resource(); r != "" {
		conv = shop + "/" + r
	}
	return []webhook.Event{{
		ID: topic + ":" + id, Type: topic, Conversation: conv, Body: req.Body,
		Headers: map[string]string{
			"content-type":          req.Header.Get("Content-Type"),
			"x-shopify-topic":       topic,
			"x-shopify-shop-domain": shop,
			"x-shopify-api-version": header(req, "Api-Version"),
			"x-shopify-webhook-id":  header(req, "Webhook-Id"),
			"x-shopify-event-id":    header(req, "Event-Id"),
		},
	}}, nil
}

func FuzzEventsMatchLegacy(f *testing.F) {
	for _, seed := range []string{
		orderBody, refundBody,
		`{"order_id":null,"admin_graphql_api_id":"gid://shopify/"}`,
		`{"order_id":{"b":1,"a":"<&>"},"id":[1,2]}`, `{"order_id":1.50,"id":true}`,
		`{"admin_graphql_api_id":"gid://shopify/Product/1?x=y","id":"9"}`, `{"id":false}`, `{"id":""}`,
		`[]`, `null`, `"gid://shopify/X/1"`, `{} x`, `{"id":1}}`, ``, `{`,
	} {
		f.Add("orders/create", "gid://shopify/Order/5", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, topic, resourceID string, body []byte) {
		req := &webhook.Request{Method: http.MethodPost, Header: http.Header{
			"X-Shopify-Topic": {topic}, "X-Shopify-Event-Id": {"e"}, "X-Shopify-Shop-Domain": {"s.myshopify.com"},
			"X-Shopify-Resource-Id": {resourceID},
		}, Body: body}
		got, err := Provider{}.Events(req, webhook.Config{})
		want, wantErr := legacyEvents(req)
		if err != nil && wantErr == nil && !json.Valid(body) && errors.Is(err, webhook.ErrMalformed) {
			return // trailing data after the JSON value: json.Decoder stopped before it, Scan rejects it
		}
		if (err == nil) != (wantErr == nil) || err != nil && !errors.Is(err, webhook.ErrMalformed) {
			t.Fatalf("Events(%q) error = %v, legacy %v", body, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Events(%q) = %+v, legacy %+v", body, got, want)
		}
	})
}
