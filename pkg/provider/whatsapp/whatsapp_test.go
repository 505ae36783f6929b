package whatsapp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

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
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func post(sig string, body []byte) *webhook.Request {
	h := http.Header{"Content-Type": {"application/json"}}
	if sig != "" {
		h.Set("X-Hub-Signature-256", sig)
	}
	return &webhook.Request{Method: http.MethodPost, Header: h, Body: body}
}

func TestVerify(t *testing.T) {
	msg := read(t, "message.json")
	// The same JSON decoded and re-encoded: what a verifier that parses
	// first would sign. It must not verify.
	var doc any
	if err := json.Unmarshal(msg, &doc); err != nil {
		t.Fatal(err)
	}
	reencoded, _ := json.Marshal(doc)
	tests := []struct {
		name    string
		secrets []string
		sig     string
		body    []byte
		want    error
	}{
		{"escaped unicode body", []string{secret}, messageSig, msg, nil},
		{"statuses", []string{secret}, statusesSig, read(t, "statuses.json"), nil},
		{"rotation: second secret matches", []string{"old", secret}, messageSig, msg, nil},
		{"re-encoded body fails", []string{secret}, messageSig, reencoded, webhook.ErrInvalidSignature},
		{"tampered body", []string{secret}, messageSig, []byte(strings.Replace(string(msg), "Caf", "Caff", 1)), webhook.ErrInvalidSignature},
		{"wrong secret", []string{"other"}, messageSig, msg, webhook.ErrInvalidSignature},
		{"sha1 header value", []string{secret}, "sha1=00", msg, webhook.ErrInvalidSignature},
		{"not hex", []string{secret}, "sha256=nothex", msg, webhook.ErrInvalidSignature},
		{"missing header", []string{secret}, "", msg, webhook.ErrMissingSignature},
		{"no secrets", nil, messageSig, msg, webhook.ErrMisconfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Provider{}.Verify(post(tt.sig, tt.body), webhook.Config{Secrets: tt.secrets}, time.Now())
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify(%q) = %v, want %v", tt.sig, err, tt.want)
			}
		})
	}
	if sign(secret, msg) != messageSig {
		t.Error("testdata/message.json does not match its recorded signature")
	}
}

func TestHandshake(t *testing.T) {
	cfg := webhook.Config{Settings: map[string]string{"verify_token": "meatyhamhock"}}
	tests := []struct {
		name   string
		method string
		query  string
		cfg    webhook.Config
		ok     bool
		reply  string
		want   error
	}{
		{"subscribe", http.MethodGet, "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock", cfg, true, "1158201444", nil},
		{"wrong token", http.MethodGet, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=nope", cfg, true, "", webhook.ErrForbidden},
		{"token prefix only", http.MethodGet, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=meaty", cfg, true, "", webhook.ErrForbidden},
		{"other mode", http.MethodGet, "hub.mode=unsubscribe&hub.challenge=1&hub.verify_token=meatyhamhock", cfg, true, "", webhook.ErrForbidden},
		{"no challenge", http.MethodGet, "hub.mode=subscribe&hub.verify_token=meatyhamhock", cfg, true, "", webhook.ErrMalformed},
		{"no verify_token setting", http.MethodGet, "hub.mode=subscribe&hub.challenge=1&hub.verify_token=", webhook.Config{}, true, "", webhook.ErrMisconfigured},
		{"plain GET is not a handshake", http.MethodGet, "", cfg, false, "", nil},
		{"POST is not a handshake", http.MethodPost, "hub.mode=subscribe", cfg, false, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			r := &webhook.Request{Method: tt.method, Header: http.Header{}, Query: q}
			reply, ok, err := Provider{}.Handshake(r, tt.cfg)
			if ok != tt.ok || tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Handshake(%q) = %v, %v; want ok %v, err %v", tt.query, ok, err, tt.ok, tt.want)
			}
			if tt.reply != "" && (reply.Status != http.StatusOK || reply.ContentType != "text/plain" || reply.Body != tt.reply) {
				t.Errorf("Handshake(%q) reply = %+v, want 200 text/plain %q", tt.query, reply, tt.reply)
			}
			if err != nil && strings.Contains(err.Error(), "meatyhamhock") {
				t.Errorf("Handshake error %q leaks the verify token", err)
			}
		})
	}
}

func TestEventsMessage(t *testing.T) {
	evs, err := Provider{}.Events(post("", read(t, "message.json")), webhook.Config{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("Events() = %d events, %v; want 1", len(evs), err)
	}
	ev := evs[0]
	if ev.ID != "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=" || ev.Type != "message.text" || ev.Conversation != "106540352242922:16505551234" {
		t.Errorf("Events() = id %q type %q conv %q", ev.ID, ev.Type, ev.Conversation)
	}
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
	evs, err := Provider{}.Events(post("", body), webhook.Config{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("Events() = %d events, %v; want 1", len(evs), err)
	}
	ev := evs[0]
	if ev.ID != "" || string(ev.Body) != string(body) || ev.Type != "message_template_status_update" || ev.Conversation != "W1" {
		t.Errorf("Events() = %+v; want one content-hashed event over the raw body", ev)
	}
	if webhook.EventID(ev) != webhook.EventID(webhook.Event{Body: body}) {
		t.Error("event is not keyed by the content hash of the body")
	}
}

func TestEventsMalformed(t *testing.T) {
	for _, body := range []string{``, `{`, `[]`, `{"entry":5}`, `{"entry":[{"changes":"x"}]}`} {
		if _, err := (Provider{}).Events(post("", []byte(body)), webhook.Config{}); !errors.Is(err, webhook.ErrMalformed) {
			t.Errorf("Events(%q) = %v, want ErrMalformed", body, err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(messageSig, []byte("{}"))
	f.Add("sha256=", []byte(""))
	f.Add("sha256=zz", []byte("x"))
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		err := Provider{}.Verify(post(sig, body), webhook.Config{Secrets: []string{"fuzz"}}, time.Now())
		if err == nil && !strings.EqualFold(strings.TrimSpace(sig), sign("fuzz", body)) {
			t.Fatalf("Verify(%q) = nil for a signature that is not the MAC", sig)
		}
	})
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
