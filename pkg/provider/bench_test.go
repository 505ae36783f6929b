package provider_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/provider"
	"github.com/hookpack/hookpack/pkg/provider/providertest"
	"github.com/hookpack/hookpack/pkg/webhook"
)

var sizes = []int{4 << 10, 64 << 10, 1 << 20}

// pad grows a sample body to n bytes without changing what it means: a
// top-level "pad" string for JSON (in the first item of a batch), a "Pad"
// field for forms.
func pad(body []byte, n int) []byte {
	if len(body) >= n {
		return body
	}
	fill := strings.Repeat("x", n-len(body)-10)
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		b := bytes.TrimSpace(body)
		return append([]byte(`{"pad":"`+fill+`",`), b[1:]...)
	}
	if b := bytes.TrimSpace(body); bytes.HasPrefix(b, []byte("[{")) { // a batch: pad its first item
		return append([]byte(`[{"pad":"`+fill[1:]+`",`), b[2:]...)
	}
	return append(append([]byte{}, body...), []byte("&Pad="+fill)...)
}

// BenchmarkHotPath measures, per provider and body size, what ingest does
// before touching AWS — verify + parse events + idempotency key + envelope
// encoding — next to the bare HMAC-SHA256 over the same bytes.
// Budget: each provider ≤ 200 µs at 4 KB, 2% of the 10 ms the ingest waits
// at the least for DynamoDB and SQS. The ratio to bare-hmac is reported,
// not bounded: docs/performance.md#verification-hot-path says why the
// adapters keep encoding/json.
func BenchmarkHotPath(b *testing.B) {
	samples := providertest.Samples(b)
	reg := provider.Registry()
	now := time.Unix(1_795_000_000, 0)
	seen := map[string]bool{}
	for _, size := range sizes {
		if raceDetector && size > 64<<10 {
			continue
		}
		b.Run(fmt.Sprintf("size=%dKB/bare-hmac", size>>10), func(b *testing.B) {
			body := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				m := hmac.New(sha256.New, []byte("secret"))
				m.Write(body)
				m.Sum(nil)
			}
		})
		for _, s := range samples {
			if s.Method != "POST" || seen[fmt.Sprint(size, s.Provider)] {
				continue
			}
			p, _ := reg.Lookup(s.Provider)
			req := s.Request()
			if _, ok, _ := handshake(p, req, s.TenantConfig); ok {
				continue
			}
			seen[fmt.Sprint(size, s.Provider)] = true
			body, err := s.Stamp(now) // a send time signed in the body (Linear's) is now's
			if err != nil {
				b.Fatal(err)
			}
			req.Body = pad(body, size)
			if err := p.(webhook.Signer).Sign(req, s.TenantConfig, now); err != nil {
				b.Fatalf("%s: sign: %v", s.Provider, err)
			}
			b.Run(fmt.Sprintf("size=%dKB/%s", size>>10, s.Provider), func(b *testing.B) {
				b.SetBytes(int64(len(req.Body)))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if err := hotPath(p, req, s.TenantConfig, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func handshake(p webhook.Provider, req *webhook.Request, cfg webhook.Config) (webhook.Reply, bool, error) {
	if h, ok := p.(webhook.Handshaker); ok {
		return h.Handshake(req, cfg)
	}
	return webhook.Reply{}, false, nil
}

func hotPath(p webhook.Provider, req *webhook.Request, cfg webhook.Config, now time.Time) error {
	if err := p.Verify(req, cfg, now); err != nil {
		return err
	}
	evs, err := p.Events(req, cfg)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		key := webhook.IdempotencyKey("demo", "p", ev)
		e := envelope.Envelope{Version: envelope.Version, Key: key, Tenant: "demo", Provider: "p", EventID: webhook.EventID(ev), Type: ev.Type, Conversation: ev.Conversation, ReceivedAt: now, Headers: ev.Headers}
		e.SetBody(ev.Body)
		if _, err := e.Encode(); err != nil {
			return err
		}
		_ = webhook.GroupID(ev.Conversation, key)
	}
	return nil
}
