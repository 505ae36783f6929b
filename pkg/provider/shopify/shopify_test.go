package shopify

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Shopify publishes no fixed vector; the construction is documented at
// https://shopify.dev/docs/apps/build/webhooks/verify-deliveries (base64
// HMAC-SHA256 of the raw body with the client secret). These values were
// computed independently with
//
//	openssl dgst -sha256 -hmac hush -binary body.json | base64
//
// over bodies that keep Shopify's escaped slashes ("gid:\/\/shopify\/…"), so
// a verifier that re-encodes the JSON would fail them.
const (
	secret     = "hush"
	orderBody  = `{"id":820982911946154508,"admin_graphql_api_id":"gid:\/\/shopify\/Order\/820982911946154508","email":"jon@example.com","name":"#9999","total_price":"403.00","currency":"USD"}`
	orderSig   = "taAD3MKeEynzKb+mHFB8hBKw09p8DAPfHIC6rGJIuwM="
	refundBody = `{"id":929361462,"order_id":820982911946154508,"admin_graphql_api_id":"gid:\/\/shopify\/Refund\/929361462","note":"wrong size"}`
	refundSig  = "yN7m4NS27LLOoGWmHuLOY3WLx3pDuEwSTIVUQ2Aa1ao="
)

// sign is the X-Shopify-Hmac-Sha256 of the documented construction.
func sign(secret, body string) string {
	return base64.StdEncoding.EncodeToString(providertest.MAC(sha256.New, secret, body))
}

func TestContract(t *testing.T) {
	vector := func(name, sig, body, sigHeader, topicHeader string) providertest.Vector {
		return providertest.Vector{Name: name, Config: webhook.Config{Secrets: []string{secret}}, Headers: []string{sigHeader},
			Request: func() *webhook.Request {
				return providertest.Request(map[string]string{sigHeader: sig, topicHeader: "orders/create"}, body)
			}}
	}
	vectors := []providertest.Vector{
		vector("order", orderSig, orderBody, "X-Shopify-Hmac-Sha256", "X-Shopify-Topic"),
		vector("refund", refundSig, refundBody, "X-Shopify-Hmac-Sha256", "X-Shopify-Topic"),
		vector("events header spelling", orderSig, orderBody, "Shopify-Hmac-Sha256", "Shopify-Topic"),
		providertest.SampleVector(t, "shopify", "orders-create", "X-Shopify-Hmac-Sha256"),
	}
	for _, spelling := range []string{"X-Shopify-", "Shopify-"} {
		t.Run(spelling, func(t *testing.T) {
			providertest.Run(t, providertest.Case{
				Provider: Provider{},
				Request: func() *webhook.Request {
					return providertest.Request(map[string]string{
						spelling + "Topic": "orders/create", spelling + "Event-Id": "e1", spelling + "Shop-Domain": "acme.myshopify.com",
						// A leftover of the other spelling must not survive Sign:
						// Verify prefers the X- one.
						"X-Shopify-Hmac-Sha256": "AAAA",
					}, orderBody)
				},
				Signature: spelling + "Hmac-Sha256",
				// Another event is other signed content: the key is the body's hash.
				OtherEvent: providertest.Replace("820982911946154508", "820982911946154509"),
				// Shopify retries "with the original payload from the time
				// they were triggered" and the same event id
				// (shopify.dev/changelog/updates-to-webhook-retry-mechanism,
				// shopify.dev/apps/build/webhooks/ignore-duplicates).
				Retry:    providertest.Resent,
				Unsigned: []string{spelling + "Event-Id", spelling + "Webhook-Id", spelling + "Topic", spelling + "Triggered-At"},
				Vectors:  vectors,
				Tampers: []providertest.Change{
					{Name: "body re-encoded", Apply: func(r *webhook.Request) { r.Body = []byte(strings.ReplaceAll(string(r.Body), `\/`, `/`)) }},
					{Name: "hex instead of base64", Apply: providertest.Header(spelling+"Hmac-Sha256", "b5a003dcc29e1329f329bfa61c507c8412b0d3da7c0c03df1c80baac6248bb03")},
					{Name: "not base64", Apply: providertest.Header(spelling+"Hmac-Sha256", "***")},
				},
				Malformed: []providertest.Change{
					{Name: "no topic", Apply: providertest.Header(spelling+"Topic", "")},
					{Name: "no id", Apply: providertest.Header(spelling+"Event-Id", "")},
					{Name: "not JSON", Apply: providertest.Body(`{`)},
					{Name: "trailing data", Apply: func(r *webhook.Request) { r.Body = append(r.Body, ` {}`...) }},
				},
			})
		})
	}
}

func TestEvents(t *testing.T) {
	shop := map[string]string{"X-Shopify-Shop-Domain": "acme.myshopify.com"}
	tests := []struct {
		name     string
		headers  map[string]string
		body     string
		wantID   string
		wantType string
		wantConv string
	}{
		{"order by event id", map[string]string{"X-Shopify-Topic": "orders/create", "X-Shopify-Event-Id": "98880550-7158-44d4-b7cd-2c97c8a091b5", "X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"}, orderBody, "orders/create:98880550-7158-44d4-b7cd-2c97c8a091b5:b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "orders/create", "acme.myshopify.com/Order/820982911946154508"},
		{"refund joins its order", map[string]string{"X-Shopify-Topic": "refunds/create", "X-Shopify-Webhook-Id": "w2"}, refundBody, "refunds/create:w2", "refunds/create", "acme.myshopify.com/Order/820982911946154508"},
		{"fulfillment joins its order", map[string]string{"X-Shopify-Topic": "fulfillments/create", "X-Shopify-Webhook-Id": "w3"}, `{"id":255858046,"order_id":820982911946154508,"status":"success"}`, "fulfillments/create:w3", "fulfillments/create", "acme.myshopify.com/Order/820982911946154508"},
		{"product without gid", map[string]string{"X-Shopify-Topic": "products/update", "X-Shopify-Webhook-Id": "w4"}, `{"id":788032119674292922,"title":"Shirt"}`, "products/update:w4", "products/update", "acme.myshopify.com/products/788032119674292922"},
		{"events webhook: resource header", map[string]string{"Shopify-Topic": "orders/updated", "Shopify-Event-Id": "e5", "Shopify-Resource-Id": "gid://shopify/Order/1"}, `{"name":"#1001"}`, "orders/updated:e5", "orders/updated", "acme.myshopify.com/Order/1"},
		{"compliance topic: shop only", map[string]string{"X-Shopify-Topic": "shop/redact", "X-Shopify-Webhook-Id": "w6"}, `{"shop_id":954889,"shop_domain":"acme.myshopify.com"}`, "shop/redact:w6", "shop/redact", "acme.myshopify.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			for k, v := range shop {
				h[k] = v
			}
			for k, v := range tt.headers {
				h[k] = v
			}
			if _, ok := h["Shopify-Topic"]; ok {
				h["Shopify-Shop-Domain"] = h["X-Shopify-Shop-Domain"]
				delete(h, "X-Shopify-Shop-Domain")
			}
			ev := providertest.OneEvent(t, Provider{}, providertest.Request(h, tt.body), webhook.Config{})
			if webhook.EventID(ev) != tt.wantID || ev.ID != "" || ev.Type != tt.wantType || ev.Conversation != tt.wantConv {
				t.Errorf("Events() = id %q (signed id %q) type %q conv %q; want %q (unsigned) %q %q", webhook.EventID(ev), ev.ID, ev.Type, ev.Conversation, tt.wantID, tt.wantType, tt.wantConv)
			}
			if string(ev.Body) != tt.body {
				t.Error("Events() changed the body")
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(orderSig, []byte(orderBody))
	f.Add("", []byte(""))
	f.Add("====", []byte("{}"))
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		r := providertest.Request(map[string]string{"X-Shopify-Hmac-Sha256": sig}, string(body))
		if err := (Provider{}).Verify(r, webhook.Config{Secrets: []string{"fuzz"}}, time.Now()); err == nil && strings.TrimSpace(sig) != sign("fuzz", string(body)) {
			t.Fatalf("Verify(%q) = nil for a signature that is not the MAC", sig)
		}
	})
}

func FuzzEvents(f *testing.F) {
	// Seeds of the former differential test against the encoding/json
	// implementation, which is now the implementation.
	for _, seed := range []string{
		orderBody, refundBody,
		`{"order_id":null,"admin_graphql_api_id":"gid://shopify/"}`,
		`{"order_id":{"b":1,"a":"<&>"},"id":[1,2]}`, `{"order_id":1.50,"id":true}`,
		`{"admin_graphql_api_id":"gid://shopify/Product/1?x=y","id":"9"}`, `{"id":false}`, `{"id":""}`,
		`[]`, `null`, `"gid://shopify/X/1"`, `{} x`, `{"id":1}}`, ``, `{`,
	} {
		f.Add("orders/create", []byte(seed))
	}
	f.Add("orders/create", []byte(orderBody))
	f.Add("refunds/create", []byte(refundBody))
	f.Add("x", []byte(`{"order_id":null,"admin_graphql_api_id":"gid://shopify/"}`))
	f.Add("", []byte(`[]`))
	f.Fuzz(func(t *testing.T, topic string, body []byte) {
		r := providertest.Request(map[string]string{"X-Shopify-Topic": topic, "X-Shopify-Webhook-Id": "w", "X-Shopify-Shop-Domain": "s"}, string(body))
		evs, err := Provider{}.Events(r, webhook.Config{})
		if err != nil && !errors.Is(err, webhook.ErrMalformed) {
			t.Fatalf("Events() error %v does not wrap ErrMalformed", err)
		}
		for _, ev := range evs {
			if webhook.EventID(ev) == "" || !strings.HasPrefix(ev.Conversation, "s") {
				t.Fatalf("Events() = %+v: want an id and a conversation scoped to the shop", ev)
			}
		}
	})
}
