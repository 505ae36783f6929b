package senders

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/receiver"
	"github.com/hookpack/hookpack/pkg/provider/discord"
	"github.com/hookpack/hookpack/pkg/provider/hubspot"
	"github.com/hookpack/hookpack/pkg/provider/sendgrid"
	"github.com/hookpack/hookpack/pkg/webhook"
)

//go:embed proof.mjs
var proofScript []byte

// nodeCase is one call of proof.mjs.
type nodeCase struct {
	Sender    string `json:"sender"`
	Op        string `json:"op"`
	Key       string `json:"key"`
	Body      []byte `json:"body"`
	Signature string `json:"signature,omitempty"`
	Timestamp string `json:"timestamp"`
	Method    string `json:"method,omitempty"`
	URL       string `json:"url,omitempty"`
}

func run(t *testing.T, cases []nodeCase) []json.RawMessage {
	t.Helper()
	script, err := receiver.Script(Modules(t), t.TempDir(), "proof.mjs", proofScript)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(cases)
	cmd := exec.Command("node", script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node proof.mjs: %v\n%s", err, stderr.String())
	}
	var res []json.RawMessage
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(cases) {
		t.Fatalf("node proof.mjs printed %s: %v", out, err)
	}
	return res
}

func request(body string, header map[string]string) *webhook.Request {
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	return &webhook.Request{Method: http.MethodPost, Header: h, Body: []byte(body), URL: "https://hooks.example.com/webhooks/acme/x"}
}

// check asserts each library verdict: the genuine signature true, the
// tampered one false.
func check(t *testing.T, res []json.RawMessage, want ...bool) {
	t.Helper()
	for i, w := range want {
		if string(res[i]) != strconv.FormatBool(w) {
			t.Errorf("library verdict %d = %s, want %v", i, res[i], w)
		}
	}
}

func TestDiscord(t *testing.T) {
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	priv := ed25519.NewKeyFromSeed(seed)
	pub := hex.EncodeToString(priv.Public().(ed25519.PublicKey))
	cfg := webhook.Config{Secrets: []string{hex.EncodeToString(priv)}}
	now := time.Now()
	const body = `{"id":"1181234567890140001","type":2,"channel_id":"C1","data":{"name":"ping"}}`
	req := request(body, nil)
	if err := (discord.Provider{}).Sign(req, cfg, now); err != nil {
		t.Fatal(err)
	}
	sig, ts := req.Header.Get(discord.SignatureHeader), req.Header.Get(discord.TimestampHeader)
	res := run(t, []nodeCase{
		{Sender: "discord", Op: "verify", Key: pub, Body: []byte(body), Signature: sig, Timestamp: ts},
		{Sender: "discord", Op: "verify", Key: pub, Body: []byte(body + " "), Signature: sig, Timestamp: ts},
		{Sender: "discord", Op: "sign", Key: hex.EncodeToString(seed), Body: []byte(body), Timestamp: ts},
	})
	check(t, res, true, false)
	var nodeSig string
	_ = json.Unmarshal(res[2], &nodeSig)
	signed := request(body, map[string]string{discord.SignatureHeader: nodeSig, discord.TimestampHeader: ts})
	if err := (discord.Provider{}).Verify(signed, webhook.Config{Secrets: []string{pub}}, now); err != nil {
		t.Errorf("Verify(tweetnacl's signature) = %v", err)
	}
	if nodeSig != sig {
		t.Errorf("tweetnacl signed %s, Go %s: Ed25519 is deterministic", nodeSig, sig)
	}
}

func TestSendGrid(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p8, _ := x509.MarshalECPrivateKey(k)
	pk, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	priv, pub := base64.StdEncoding.EncodeToString(p8), base64.StdEncoding.EncodeToString(pk)
	now := time.Now()
	const body = `[{"email":"a@example.com","event":"delivered","sg_event_id":"E1","sg_message_id":"M1","timestamp":1700000000}]`
	req := request(body, nil)
	if err := (sendgrid.Provider{}).Sign(req, webhook.Config{Secrets: []string{priv}}, now); err != nil {
		t.Fatal(err)
	}
	sig, ts := req.Header.Get(sendgrid.SignatureHeader), req.Header.Get(sendgrid.TimestampHeader)
	res := run(t, []nodeCase{
		{Sender: "sendgrid", Op: "verify", Key: pub, Body: []byte(body), Signature: sig, Timestamp: ts},
		{Sender: "sendgrid", Op: "verify", Key: pub, Body: []byte(body), Signature: sig, Timestamp: strconv.FormatInt(now.Unix()+1, 10)},
		{Sender: "sendgrid", Op: "sign", Key: priv, Body: []byte(body), Timestamp: ts},
	})
	check(t, res, true, false)
	var nodeSig string
	_ = json.Unmarshal(res[2], &nodeSig)
	signed := request(body, map[string]string{sendgrid.SignatureHeader: nodeSig, sendgrid.TimestampHeader: ts})
	if err := (sendgrid.Provider{}).Verify(signed, webhook.Config{Secrets: []string{pub}}, now); err != nil {
		t.Errorf("Verify(Node crypto's signature) = %v", err)
	}
}

func TestHubSpot(t *testing.T) {
	const secret = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"
	cfg := webhook.Config{Secrets: []string{secret}}
	now := time.Now()
	const body = `[{"eventId":1,"subscriptionId":2,"portalId":3,"occurredAt":1700000000000,"subscriptionType":"contact.creation","attemptNumber":0,"objectId":4}]`
	req := request(body, nil)
	req.URL = "https://hooks.example.com/webhooks/acme/hubspot?tenant=acme"
	if err := (hubspot.Provider{}).Sign(req, cfg, now); err != nil {
		t.Fatal(err)
	}
	sig, ts := req.Header.Get(hubspot.SignatureHeader), req.Header.Get(hubspot.TimestampHeader)
	res := run(t, []nodeCase{
		{Sender: "hubspot", Op: "verify", Key: secret, Body: []byte(body), Signature: sig, Timestamp: ts, Method: "POST", URL: req.URL},
		{Sender: "hubspot", Op: "verify", Key: secret, Body: []byte(body), Signature: sig, Timestamp: ts, Method: "POST", URL: req.URL + "&x=1"},
		{Sender: "hubspot", Op: "sign", Key: secret, Body: []byte(body), Timestamp: ts, Method: "POST", URL: req.URL},
	})
	check(t, res, true, false)
	var nodeSig string
	_ = json.Unmarshal(res[2], &nodeSig)
	signed := request(body, map[string]string{hubspot.SignatureHeader: nodeSig, hubspot.TimestampHeader: ts})
	signed.URL = req.URL
	if err := (hubspot.Provider{}).Verify(signed, cfg, now); err != nil {
		t.Errorf("Verify(@hubspot/api-client's signature) = %v", err)
	}
}
