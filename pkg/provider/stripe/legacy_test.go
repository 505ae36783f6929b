package stripe

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonkeys"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// legacyEvents is Events as it was when it decoded the body with
// encoding/json; FuzzEventsMatchLegacy holds the single-pass Events to it.
func legacyEvents(req *webhook.Request) ([]webhook.Event, error) {
	var e struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Account string `json:"account"`
		Data    struct {
			Object struct {
				ID       string          `json:"id"`
				Customer json.RawMessage `json:"customer"`
			} `json:"object"`
		} `json:"data"`
		RelatedObject struct {
			ID string `json:"id"`
		} `json:"related_object"`
	}
	if err := json.Unmarshal(req.Body, &e); err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a Stripe event: %v", err)
	}
	if e.ID == "" {
		return nil, webhook.Errorf(webhook.ErrMalformed, "event has no id")
	}
	conv := legacyCustomer(e.Data.Object.Customer)
	if conv == "" {
		conv = e.Data.Object.ID
	}
	if conv == "" {
		conv = e.RelatedObject.ID
	}
	switch {
	case e.Account != "" && conv != "":
		conv = e.Account + "/" + conv
	case e.Account != "":
		conv = e.Account
	}
	return []webhook.Event{{
		ID: e.ID, Type: e.Type, Conversation: conv, Body: req.Body,
		Headers: map[string]string{"content-type": req.Header.Get("Content-Type")},
	}}, nil
}

func legacyCustomer(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] == 'n' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.ID
	}
	return ""
}

func FuzzEventsMatchLegacy(f *testing.F) {
	for _, seed := range []string{
		`{"id":"evt_1","type":"invoice.paid","data":{"object":{"id":"in_1","customer":"cus_9"}}}`,
		`{"id":"evt_1","account":"acct_1","data":{"object":{"customer":{"id":"cus_2","x":[1]}}}}`,
		`{"id":"evt_1","data":{"object":{"customer":{"id":1}}}}`,
		`{"id":"evt_1","data":{"object":{"id":"in_1","customer":5}}}`,
		`{"id":"evt_1","data":{"object":{"id":"in_1","customer":""}},"related_object":{"id":"r"}}`,
		`{"id":"evt_1","data":null,"related_object":{"id":"r_1"},"account":"a"}`,
		`{"id":"evt_1","data":{"object":[]}}`, `{"id":5}`, `{"id":"e","type":null}`, `{"id":"e","account":true}`,
		`{"id":"e","related_object":"x"}`, `{"id":"evt_\u00e9\ud800"}`, `null`, `[]`, `"x"`, `{}`, `{"id":"e"} x`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if json.Valid(body) && jsonkeys.Ambiguous(body) {
			t.Skip("keys where struct decoding and Scan legitimately differ")
		}
		req := &webhook.Request{Method: http.MethodPost, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
		got, err := Provider{}.Events(req, webhook.Config{})
		want, wantErr := legacyEvents(req)
		if (err == nil) != (wantErr == nil) || err != nil && !errors.Is(err, webhook.ErrMalformed) {
			t.Fatalf("Events(%q) error = %v, legacy %v", body, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Events(%q) = %+v, legacy %+v", body, got, want)
		}
	})
}
