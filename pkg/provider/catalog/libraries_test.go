package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

type nodeDelivery struct {
	Sender  string            `json:"sender"`
	Secret  string            `json:"secret"`
	Headers map[string]string `json:"headers"`
	Body    []byte            `json:"body"`
	URL     string            `json:"url"`
}

type nodeSign struct {
	Sender    string `json:"sender"`
	Secret    string `json:"secret"`
	ID        string `json:"id"`
	Timestamp int64  `json:"timestamp"`
	Body      []byte `json:"body"`
}

// TestSendersOwnLibraries signs every row's delivery as hookpack's Sign
// does (what `make send` and the samples send) and has the sender's own npm
// library — or, where the sender publishes none, the verification snippet
// of its documentation (scripts/senders/check.mjs) — accept it and refuse
// it tampered; and has svix sign the Standard Webhooks senders' deliveries
// for the rows to verify. A row whose header, encoding, prefix or signed
// content differs from the sender's fails here.
func TestSendersOwnLibraries(t *testing.T) {
	modules := providertest.SenderModules(t)
	src, err := os.ReadFile(filepath.Join(providertest.ScriptsDir(), "senders", "check.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := providertest.NodeScript(modules, t.TempDir(), "check.mjs", src)
	if err != nil {
		t.Fatal(err)
	}

	// The libraries check timestamps against the wall clock: Paddle's refuses
	// one more than 5 s old, which node's start under load can exceed, but
	// not one ahead; Linear's allows 60 s either way, Standard Webhooks 5 min.
	// So deliveries are signed 20 s ahead.
	now := time.Now().Add(20 * time.Second)
	var in struct {
		Deliveries []nodeDelivery `json:"deliveries"`
		Sign       []nodeSign     `json:"sign"`
	}
	var names []string
	for i := range Rows {
		row := &Rows[i]
		c := senders[row.Name]
		s := New(row)
		req := deliveryOf(row, c)
		if row.TimestampJSON != "" {
			req.Body = setJSON(req.Body, row.TimestampJSON, json.Number(strconv.FormatInt(now.UnixMilli(), 10)))
		}
		secret := "library-secret-" + row.Name
		if row.Scheme == StandardWebhooks {
			secret = whsec[1]
			in.Sign = append(in.Sign, nodeSign{Sender: row.Name, Secret: secret, ID: "msg_" + row.Name, Timestamp: now.Unix(), Body: req.Body})
		}
		cfg := webhook.Config{Secrets: []string{secret}, Settings: c.settings}
		at := now
		if row.Retries != nil && row.Retries.Window.Future == webhook.AnyFuture {
			// Paddle's: any time ahead, so far enough ahead that no load
			// makes it 5 s old by the time node checks it.
			at = now.Add(10 * time.Minute)
		}
		if err := s.Sign(req, cfg, at); err != nil {
			t.Fatalf("%s: Sign() = %v", row.Name, err)
		}
		u, err := webhook.RebaseURL(req.URL, c.settings["base_url"])
		if err != nil {
			t.Fatal(err)
		}
		h := map[string]string{}
		for k := range req.Header {
			h[lower(k)] = req.Header.Get(k)
		}
		good := nodeDelivery{Sender: row.Name, Secret: secret, Headers: h, Body: req.Body, URL: u}
		tampered := good
		tampered.Body = append(bytes.Clone(req.Body[:len(req.Body)-1]), []byte(` ,"x":1}`)...)
		in.Deliveries = append(in.Deliveries, good, tampered)
		names = append(names, row.Name)
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node check.mjs: %v: %s", err, stderr.Bytes())
	}
	var out struct {
		Verified []string `json:"verified"`
		Signed   []string `json:"signed"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Verified) != len(in.Deliveries) || len(out.Signed) != len(in.Sign) {
		t.Fatalf("node check.mjs printed %q (%v)", stdout.Bytes(), err)
	}
	for i, name := range names {
		if got := out.Verified[2*i]; got != "" {
			t.Errorf("%s: the sender's check refused hookpack's signature: %s", name, got)
		}
		if out.Verified[2*i+1] == "" {
			t.Errorf("%s: the sender's check accepted a tampered body: it checks nothing", name)
		}
	}
	for i, sg := range in.Sign {
		req := &webhook.Request{Header: map[string][]string{}, Body: sg.Body}
		req.Header.Set("Webhook-Id", sg.ID)
		req.Header.Set("Webhook-Timestamp", strconv.FormatInt(sg.Timestamp, 10))
		req.Header.Set("Webhook-Signature", out.Signed[i])
		s := Senders()[sg.Sender]
		if err := s.Verify(req, webhook.Config{Secrets: []string{sg.Secret}}, now); err != nil {
			t.Errorf("%s: Verify(signed by svix) = %v", sg.Sender, err)
		}
		if _, err := s.Events(req, webhook.Config{Secrets: []string{sg.Secret}}); err != nil {
			t.Errorf("%s: Events(signed by svix) = %v", sg.Sender, err)
		}
	}
}

func lower(s string) string { return string(bytes.ToLower([]byte(s))) }
