package shopify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

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

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func request(headers map[string]string, body string) *webhook.Request {
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	return &webhook.Request{Method: http.MethodPost, Header: h, Body: []byte(body)}
}

func TestVectorsMatchConstruction(t *testing.T) {
	if sign(secret, orderBody) != orderSig || sign(secret, refundBody) != refundSig {
		t.Fatal("test vectors do not match the documented construction")
	}
}

func TestVerify(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name    string
		secrets []string
		headers map[string]string
		body    string
		want    error
	}{
		{"order", []string{secret}, map[string]string{"X-Shopify-Hmac-Sha256": orderSig}, orderBody, nil},
		{"refund", []string{secret}, map[string]string{"X-Shopify-Hmac-Sha256": refundSig}, refundBody, nil},
		{"events header spelling", []string{secret}, map[string]string{"Shopify-Hmac-Sha256": orderSig}, orderBody, nil},
		{"rotation: second secret matches", []string{"old", secret}, map[string]string{"X-Shopify-Hmac-Sha256": orderSig}, orderBody, nil},
		{"re-encoded body fails", []string{secret}, map[string]string{"X-Shopify-Hmac-Sha256": orderSig}, strings.ReplaceAll(orderBody, `\/`, `/`), webhook.ErrInvalidSignature},
		{"wrong secret", []string{"other"}, map[string]string{"X-Shopify-Hmac-Sha256": orderSig}, orderBody, webhook.ErrInvalidSignature},
		{"hex instead of base64", []string{secret}, map[string]string{"X-Shopify-Hmac-Sha256": "b5a003dcc29e1329f329bfa61c507c8412b0d3da7c0c03df1c80baac6248bb03"}, orderBody, webhook.ErrInvalidSignature},
		{"not base64", []string{secret}, map[string]string{"X-Shopify-Hmac-Sha256": "***"}, orderBody, webhook.ErrInvalidSignature},
		{"missing header", []string{secret}, nil, orderBody, webhook.ErrMissingSignature},
		{"no secrets", nil, map[string]string{"X-Shopify-Hmac-Sha256": orderSig}, orderBody, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Provider{}.Verify(request(tt.headers, tt.body), webhook.Config{Secrets: tt.secrets}, now)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify(%v) = %v, want %v", tt.headers, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), sign(secret, tt.body)) {
				t.Errorf("Verify error %q leaks the expected signature", err)
			}
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
		{"order by event id", map[string]string{"X-Shopify-Topic": "orders/create", "X-Shopify-Event-Id": "98880550-7158-44d4-b7cd-2c97c8a091b5", "X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"}, orderBody, "orders/create:98880550-7158-44d4-b7cd-2c97c8a091b5", "orders/create", "acme.myshopify.com/Order/820982911946154508"},
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
			evs, err := Provider{}.Events(request(h, tt.body), webhook.Config{})
			if err != nil || len(evs) != 1 {
				t.Fatalf("Events() = %d events, %v; want 1", len(evs), err)
			}
			ev := evs[0]
			if ev.ID != tt.wantID || ev.Type != tt.wantType || ev.Conversation != tt.wantConv {
				t.Errorf("Events() = id %q type %q conv %q; want %q %q %q", ev.ID, ev.Type, ev.Conversation, tt.wantID, tt.wantType, tt.wantConv)
			}
			if string(ev.Body) != tt.body {
				t.Error("Events() changed the body")
			}
		})
	}
}

func TestEventsMalformed(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string
		body    string
	}{
		{"no topic", map[string]string{"X-Shopify-Webhook-Id": "w"}, orderBody},
		{"no id", map[string]string{"X-Shopify-Topic": "orders/create"}, orderBody},
		{"not JSON", map[string]string{"X-Shopify-Topic": "orders/create", "X-Shopify-Webhook-Id": "w"}, "{"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := (Provider{}).Events(request(tt.headers, tt.body), webhook.Config{}); !errors.Is(err, webhook.ErrMalformed) {
				t.Errorf("Events() = %v, want ErrMalformed", err)
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(orderSig, []byte(orderBody))
	f.Add("", []byte(""))
	f.Add("====", []byte("{}"))
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		r := request(map[string]string{"X-Shopify-Hmac-Sha256": sig}, string(body))
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
		r := request(map[string]string{"X-Shopify-Topic": topic, "X-Shopify-Webhook-Id": "w", "X-Shopify-Shop-Domain": "s"}, string(body))
		evs, err := Provider{}.Events(r, webhook.Config{})
		if err != nil && !errors.Is(err, webhook.ErrMalformed) {
			t.Fatalf("Events() error %v does not wrap ErrMalformed", err)
		}
		for _, ev := range evs {
			if ev.ID == "" || !strings.HasPrefix(ev.Conversation, "s") {
				t.Fatalf("Events() = %+v: want an id and a conversation scoped to the shop", ev)
			}
		}
	})
}
