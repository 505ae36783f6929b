package whatsapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Meta publishes no fixed signature vector. The scheme (X-Hub-Signature-256,
// "sha256=" + hex HMAC-SHA256 of the raw body with the app secret) is
// documented at
// https://developers.facebook.com/docs/graph-api/webhooks/getting-started#validate-payloads
// and the payload shapes at
// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages.
// testdata/*.json follow those samples, with escaped non-ASCII ("Ren\u00e9e",
// "Caf\u00e9") and slashes as Meta sends them; the signatures below were
// computed independently with
//
//	openssl dgst -sha256 -hmac meta-app-secret testdata/message.json
const (
	secret      = "meta-app-secret"
	messageSig  = "sha256=9673867636914e7b0dc05ac0a094c1cc25f6e90f05d3db94d6f8e3ed4f7d578c"
	statusesSig = "sha256=671b332e88773722d1c6a9fb1e990ced793aa2ab65ac34aca98c1b09c84659a5"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	return providertest.ReadFile(t, "testdata/"+name)
}

func post(sig string, body []byte) *webhook.Request {
	h := http.Header{"Content-Type": {"application/json"}}
	if sig != "" {
		h.Set("X-Hub-Signature-256", sig)
	}
	return &webhook.Request{Method: http.MethodPost, Header: h, Body: body}
}

func TestContract(t *testing.T) {
	msg := read(t, "message.json")
	// The same JSON decoded and re-encoded: what a verifier that parses
	// first would sign. It must not verify.
	var doc any
	if err := json.Unmarshal(msg, &doc); err != nil {
		t.Fatal(err)
	}
	reencoded, _ := json.Marshal(doc)
	vector := func(name, sig string, body []byte) providertest.Vector {
		return providertest.Vector{Name: name, Request: func() *webhook.Request { return post(sig, body) },
			Config: webhook.Config{Secrets: []string{secret}}, Headers: []string{"X-Hub-Signature-256"}}
	}
	header := func(value string) func(*webhook.Request) {
		return func(r *webhook.Request) { r.Header.Set("X-Hub-Signature-256", value) }
	}
	get := func(query string) func() *webhook.Request {
		return func() *webhook.Request {
			q, _ := url.ParseQuery(query)
			return &webhook.Request{Method: http.MethodGet, Header: http.Header{}, Query: q}
		}
	}
	forbidden := func(name, query string, want error) providertest.Handshake {
		return providertest.Handshake{Name: name, Request: get(query), OK: true, Err: want}
	}
	providertest.Run(t, providertest.Case{
		Provider:   Provider{},
		Request:    func() *webhook.Request { return post("", bytes.Clone(msg)) },
		Settings:   map[string]string{"verify_token": "meatyhamhock"},
		Signature:  "X-Hub-Signature-256",
		OtherEvent: func(r *webhook.Request) { r.Body = bytes.Replace(r.Body, []byte("wamid.HBg"), []byte("wamid.XBg"), 1) },
		// Meta retries a failed notification with the same signed body
		// (docs/providers/whatsapp.md).
		Retry: providertest.Resent,
		Vectors: []providertest.Vector{
			vector("escaped unicode body", messageSig, msg),
			vector("statuses", statusesSig, read(t, "statuses.json")),
			providertest.SampleVector(t, "whatsapp", "message-text", "X-Hub-Signature-256"),
		},
		Tampers: []providertest.Change{
			{Name: "body re-encoded", Apply: func(r *webhook.Request) { r.Body = reencoded }},
			{Name: "escape decoded", Apply: func(r *webhook.Request) { r.Body = bytes.Replace(r.Body, []byte(`\u00e9`), []byte("é"), 1) }},
			{Name: "sha1 header value", Apply: header("sha1=00")},
			{Name: "not hex", Apply: header("sha256=nothex")},
		},
		Malformed: []providertest.Change{
			{Name: "empty", Apply: func(r *webhook.Request) { r.Body = nil }},
			{Name: "not JSON", Apply: providertest.Body(`{`)},
			{Name: "array", Apply: providertest.Body(`[]`)},
			{Name: "entry not an array", Apply: providertest.Body(`{"entry":5}`)},
			{Name: "changes not an array", Apply: providertest.Body(`{"entry":[{"changes":"x"}]}`)},
			{Name: "trailing data", Apply: func(r *webhook.Request) { r.Body = append(r.Body, ` {}`...) }},
		},
		Handshakes: []providertest.Handshake{
			{Name: "subscribe", Request: get("hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock"), OK: true,
				Reply: webhook.Reply{Status: http.StatusOK, ContentType: "text/plain", Body: "1158201444"}},
			forbidden("wrong token", "hub.mode=subscribe&hub.challenge=1&hub.verify_token=nope", webhook.ErrForbidden),
			forbidden("token prefix only", "hub.mode=subscribe&hub.challenge=1&hub.verify_token=meaty", webhook.ErrForbidden),
			forbidden("other mode", "hub.mode=unsubscribe&hub.challenge=1&hub.verify_token=meatyhamhock", webhook.ErrForbidden),
			forbidden("no challenge", "hub.mode=subscribe&hub.verify_token=meatyhamhock", webhook.ErrMalformed),
			{Name: "no verify_token setting", Request: get("hub.mode=subscribe&hub.challenge=1&hub.verify_token="), Settings: map[string]string{},
				OK: true, Err: webhook.ErrMisconfigured},
			{Name: "plain GET is not a handshake", Request: get("")},
			{Name: "POST is not a handshake", Request: func() *webhook.Request { r := get("hub.mode=subscribe")(); r.Method = http.MethodPost; return r }},
		},
	})
}

func TestEventsMessage(t *testing.T) {
	ev := providertest.WantEvent(t, Provider{}, post("", read(t, "message.json")), webhook.Config{},
		webhook.Event{ID: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", Type: "message.text", Conversation: "106540352242922:16505551234"})
	var body struct {
		Metadata struct {
			PhoneNumberID string `json:"phone_number_id"`
		} `json:"metadata"`
		Contacts []struct {
			Profile struct{ Name string } `json:"profile"`
		} `json:"contacts"`
		Message struct {
			Text struct{ Body string } `json:"text"`
		} `json:"message"`
		EntryID string `json:"entry_id"`
	}
	if err := json.Unmarshal(ev.Body, &body); err != nil {
		t.Fatalf("event body is not JSON: %v", err)
	}
	if body.Metadata.PhoneNumberID != "106540352242922" || len(body.Contacts) != 1 || body.Contacts[0].Profile.Name != "Renée" || body.Message.Text.Body != "Café <3 & / tea?" || body.EntryID != "102290129340398" {
		t.Errorf("event body lacks context: %s", ev.Body)
	}
	if !strings.Contains(string(ev.Body), `Caf\u00e9 <3 & \/ tea?`) {
		t.Errorf("event body re-escaped the message text: %s", ev.Body)
	}
}

func TestEventsStatuses(t *testing.T) {
	evs, err := Provider{}.Events(post("", read(t, "statuses.json")), webhook.Config{})
	if err != nil || len(evs) != 2 {
		t.Fatalf("Events() = %d events, %v; want 2", len(evs), err)
	}
	for i, status := range []string{"delivered", "read"} {
		ev := evs[i]
		if ev.ID != "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI3RjQ2OTM4MDYzMzFGNzYxNTIA:"+status || ev.Type != "status."+status || ev.Conversation != "106540352242922:16505551234" {
			t.Errorf("event %d = id %q type %q conv %q", i, ev.ID, ev.Type, ev.Conversation)
		}
		if !strings.Contains(string(ev.Body), `"status":{"id"`) || !strings.Contains(string(ev.Body), `"status":"`+status+`"`) {
			t.Errorf("event %d body is not its status: %s", i, ev.Body)
		}
	}
}

func TestEventsBatch(t *testing.T) {
	body := `{"object":"whatsapp_business_account","entry":[
 {"id":"W1","changes":[
  {"field":"messages","value":{"metadata":{"phone_number_id":"P1"},"contacts":[{"wa_id":"A","profile":{"name":"a"}},{"wa_id":"B","profile":{"name":"b"}}],
   "messages":[{"from":"A","id":"wamid.1","type":"text"},{"from":"B","id":"wamid.2","type":"image"}]}},
  {"field":"messages","value":{"metadata":{"phone_number_id":"P1"},"statuses":[{"id":"wamid.9","status":"sent","recipient_id":"A"}]}},
  {"field":"account_update","value":{"event":"VERIFIED_ACCOUNT"}}]},
 {"id":"W2","changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"P2"},"messages":[{"from":"C","id":"wamid.3","type":"reaction"}]}}]}]}`
	evs, err := Provider{}.Events(post("", []byte(body)), webhook.Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, typ, conv string }{
		{"wamid.1", "message.text", "P1:A"},
		{"wamid.2", "message.image", "P1:B"},
		{"wamid.9:sent", "status.sent", "P1:A"},
		{"wamid.3", "message.reaction", "P2:C"},
		{"", "account_update", "W1"},
	}
	if len(evs) != len(want) {
		t.Fatalf("Events() = %d events, want %d", len(evs), len(want))
	}
	for i, w := range want {
		if evs[i].ID != w.id || evs[i].Type != w.typ || evs[i].Conversation != w.conv {
			t.Errorf("event %d = %q %q %q, want %q %q %q", i, evs[i].ID, evs[i].Type, evs[i].Conversation, w.id, w.typ, w.conv)
		}
	}
	if strings.Contains(string(evs[0].Body), `"b"`) || !strings.Contains(string(evs[1].Body), `"b"`) {
		t.Errorf("contacts not narrowed to the sender: %s / %s", evs[0].Body, evs[1].Body)
	}
	if webhook.EventID(evs[4]) == webhook.EventID(webhook.Event{Body: []byte(body)}) {
		t.Error("other change keyed like the whole body")
	}
}

func TestEventsNoMessages(t *testing.T) {
	body := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"W1","changes":[{"field":"message_template_status_update","value":{"event":"APPROVED","message_template_id":1}}]}]}`)
	ev := providertest.WantEvent(t, Provider{}, post("", body), webhook.Config{}, webhook.Event{Type: "message_template_status_update", Conversation: "W1"})
	if string(ev.Body) != string(body) {
		t.Errorf("Events() body = %q; want the raw body, content-hashed", ev.Body)
	}
	if webhook.EventID(ev) != webhook.EventID(webhook.Event{Body: body}) {
		t.Error("event is not keyed by the content hash of the body")
	}
}

func FuzzEvents(f *testing.F) {
	// Seeds of the former differential test against the encoding/json
	// implementation, which is now the implementation.
	for _, seed := range [][]byte{
		read(f, "message.json"), read(f, "statuses.json"),
		[]byte(`{"entry":[{"changes":[{"value":{"messages":[1,null,{"id":""}],"statuses":[{}]}}]}]}`),
		[]byte(`{"entry":[{"changes":[{"field":"x","value":null}]}]}`),
		[]byte(`{"object":"o","entry":[null,{"id":"W","changes":[null,{"field":"f"},{"value":{"messages":[]}}]}]}`),
		[]byte(` {"object" : "wh\u0061ts<&>", "entry" : [ {"id":"W1", "changes":[ {"field":"messages", "value": {"metadata": null,
			"contacts":[{"wa_id":"A","id":5}, null, {"wa_id":"A"}, 3, {"wa_id":"B"}], "messages":[ {"from":"A","id":"m1","type":7,"text":{"body":"a\u2028 b"}}, {"from":""} ],
			"statuses":[{"id":"s","status":"read","recipient_id":"A"}, [1]]}} ]} ]} `),
		[]byte(`{"entry":[{"changes":[{"value":{"metadata":{"phone_number_id":5},"messages":{"x":1},"contacts":"c","statuses":[{"id":1}]}}]}]}`),
		[]byte(`{"entry":[{"changes":[{"value":[1],"field":"f"},{"value":"v"}]}]}`),
		[]byte(`{"entry":5}`), []byte(`{"entry":[{"changes":"x"}]}`), []byte(`{"entry":[1]}`), []byte(`{"object":1}`),
		[]byte(`{"entry":[{"id":2}]}`), []byte(`{"entry":[{"changes":[{"field":[]}]}]}`), []byte(`null`), []byte(`[]`), []byte(``), []byte(`{} x`),
	} {
		f.Add(seed)
	}
	f.Add(read(f, "message.json"))
	f.Add(read(f, "statuses.json"))
	f.Add([]byte(`{"entry":[{"changes":[{"value":{"messages":[1,null,{"id":""}],"statuses":[{}]}}]}]}`))
	f.Add([]byte(`{"entry":[{"changes":[{"field":"x","value":null}]}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		evs, err := Provider{}.Events(post("", body), webhook.Config{})
		if err != nil {
			if !errors.Is(err, webhook.ErrMalformed) {
				t.Fatalf("Events() error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if len(evs) == 0 {
			t.Fatal("Events() returned no event and no error")
		}
		for _, ev := range evs {
			if ev.ID == "" && ev.Body == nil {
				t.Fatal("Events() returned an event with neither id nor body")
			}
			if len(evs) > 1 && !json.Valid(ev.Body) {
				t.Fatalf("split event body is not JSON: %q", ev.Body)
			}
		}
	})
}
