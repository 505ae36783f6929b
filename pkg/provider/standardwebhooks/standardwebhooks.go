// Package standardwebhooks verifies and parses deliveries that follow the
// Standard Webhooks specification (https://www.standardwebhooks.com), which
// Svix and the senders built on it (Clerk, Resend, Replicate, …) use. It is
// registered as both "standardwebhooks" and "svix".
// docs/providers/standardwebhooks.md describes the scheme (HMAC and Ed25519
// secrets), the ids and conversations derived, and the settings.
package standardwebhooks

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/internal/jsonpath"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Retries is what the specification says: every attempt's
// webhook-timestamp is the time of that attempt (the id stays), over a
// schedule of days (its example: 75 h 35 min 5 s), and its verifiers refuse
// a timestamp more than five minutes old or ahead.
var Retries = webhook.Retries{
	Signing: webhook.Resigned,
	Horizon: 75*time.Hour + 35*time.Minute + 5*time.Second,
	Source:  "https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#webhook-metadata",
	Window:  webhook.Symmetric(5 * time.Minute),
}

// Provider implements webhook.Provider for Standard Webhooks.
type Provider struct{}

// header returns webhook-<name>, or its svix-<name> alias.
func header(req *webhook.Request, name string) string {
	if v := strings.TrimSpace(req.Header.Get("Webhook-" + name)); v != "" {
		return v
	}
	return strings.TrimSpace(req.Header.Get("Svix-" + name))
}

// signatures is a parsed webhook-signature header.
type signatures struct {
	v1, v1a [][]byte
	// bad counts v1/v1a entries whose payload is not base64.
	bad int
}

// parseSignatures parses "v1,<b64> v1,<b64> v1a,<b64>"; entries of other
// versions are ignored.
func parseSignatures(h string) signatures {
	var s signatures
	for _, entry := range strings.Fields(h) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || (version != "v1" && version != "v1a") {
			continue
		}
		b, ok := webhook.DecodeBase64(base64.StdEncoding, sig)
		if !ok {
			s.bad++
			continue
		}
		if version == "v1" {
			s.v1 = append(s.v1, b)
		} else {
			s.v1a = append(s.v1a, b)
		}
	}
	return s
}

// Verify checks webhook-signature against every secret and the timestamp
// against Retries.Window (its Past replaced by a "tolerance" setting). It
// returns an error wrapping
// webhook.ErrMissingSignature (a header is absent, the timestamp is not a
// number, no v1/v1a entry), webhook.ErrInvalidSignature (nothing matches),
// webhook.ErrStale (genuine but outside the tolerance) or
// webhook.ErrMisconfigured (no secrets, a secret that is not base64, bad
// tolerance).
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	id, ts, raw := header(req, "Id"), header(req, "Timestamp"), header(req, "Signature")
	switch {
	case id == "":
		return webhook.Errorf(webhook.ErrMissingSignature, "webhook-id header is required")
	case ts == "":
		return webhook.Errorf(webhook.ErrMissingSignature, "webhook-timestamp header is required")
	case raw == "":
		return webhook.Errorf(webhook.ErrMissingSignature, "webhook-signature header is required")
	}
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
		return webhook.Errorf(webhook.ErrMissingSignature, "webhook-timestamp is not Unix seconds")
	}
	sigs := parseSignatures(raw)
	if len(sigs.v1) == 0 && len(sigs.v1a) == 0 {
		if sigs.bad > 0 {
			return webhook.Errorf(webhook.ErrInvalidSignature, "webhook-signature entries are not base64")
		}
		return webhook.Errorf(webhook.ErrMissingSignature, "webhook-signature has no v1 entry")
	}
	win, err := Retries.Window.Tenant(cfg)
	if err != nil {
		return err
	}
	if err := cfg.CheckSecrets("standardwebhooks"); err != nil {
		return err
	}
	content := []byte(id + "." + ts + ".")
	var signed []byte // content and body in one piece, for Ed25519; built once needed
	ok := 0
	var keyBuf [64]byte
	var sum [sha256.Size]byte
	for i, s := range cfg.Secrets {
		if pk, isPK := strings.CutPrefix(s, "whpk_"); isPK {
			key, err := base64.StdEncoding.DecodeString(pk)
			if err != nil || len(key) != ed25519.PublicKeySize {
				return webhook.Errorf(webhook.ErrMisconfigured, "standardwebhooks: secret %d is not a base64 Ed25519 public key", i+1)
			}
			if signed == nil {
				signed = append(append(make([]byte, 0, len(content)+len(req.Body)), content...), req.Body...)
			}
			for _, sig := range sigs.v1a {
				if ed25519.Verify(ed25519.PublicKey(key), signed, sig) {
					ok = 1
				}
			}
			continue
		}
		key, err := base64.StdEncoding.AppendDecode(keyBuf[:0], []byte(strings.TrimPrefix(s, "whsec_")))
		if err != nil || len(key) == 0 {
			return webhook.Errorf(webhook.ErrMisconfigured, "standardwebhooks: secret %d is not whsec_ followed by base64", i+1)
		}
		m := hmac.New(sha256.New, key)
		m.Write(content)
		m.Write(req.Body)
		mac := m.Sum(sum[:0])
		for _, sig := range sigs.v1 {
			ok |= subtle.ConstantTimeCompare(mac, sig)
		}
	}
	matched := ok == 1
	if !matched {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured secret matches webhook-signature")
	}
	return win.CheckUnix(ts, now)
}

// Events returns the single event of a delivery. It returns an error
// wrapping webhook.ErrMalformed when webhook-id is missing. A body that is
// not JSON is accepted: it simply has no type, and the id is its
// conversation.
func (Provider) Events(req *webhook.Request, cfg webhook.Config) ([]webhook.Event, error) {
	id := header(req, "Id")
	if id == "" {
		return nil, webhook.Errorf(webhook.ErrMalformed, "webhook-id header is required")
	}
	ev := webhook.Event{
		ID:           id,
		Conversation: id,
		Body:         req.Body,
		Headers: map[string]string{
			"content-type":      req.Header.Get("Content-Type"),
			"webhook-id":        id,
			"webhook-timestamp": header(req, "Timestamp"),
		},
	}
	if doc, err := jsonpath.Decode(req.Body); err == nil {
		ev.Type = jsonpath.Text(doc, cfg.Setting("type", "type"))
		if p := cfg.Settings["conversation"]; p != "" {
			if v := jsonpath.Text(doc, p); v != "" {
				ev.Conversation = v
			}
		}
	}
	return []webhook.Event{ev}, nil
}

// Sign sets webhook-timestamp to now (Unix seconds) and webhook-signature to
// "v1," + base64 HMAC-SHA256 of "{id}.{timestamp}.{body}" under the key of
// cfg.Secrets[0] ("whsec_" + base64, the prefix optional). The id is the
// request's own webhook-id; a request that uses the svix-* aliases keeps
// them (svix-timestamp, svix-signature).
//
// It returns an error wrapping webhook.ErrMalformed when the request has no
// webhook-id (or svix-id), and webhook.ErrMisconfigured when the tenant has
// no secrets or the first one is a "whpk_" public key, which can only
// verify.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	id := header(req, "Id")
	if id == "" {
		return webhook.Errorf(webhook.ErrMalformed, "webhook-id header is required to sign")
	}
	if err := cfg.CheckSecrets("standardwebhooks"); err != nil {
		return err
	}
	s := cfg.Secrets[0]
	if strings.HasPrefix(s, "whpk_") {
		return webhook.Errorf(webhook.ErrMisconfigured, "standardwebhooks: secret 1 is a whpk_ public key, which cannot sign")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	if err != nil || len(key) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "standardwebhooks: secret 1 is not whsec_ followed by base64")
	}
	family := "Webhook-"
	if strings.TrimSpace(req.Header.Get("Webhook-Id")) == "" {
		// svix-* aliases: Verify reads webhook-* first, so none may remain.
		family = "Svix-"
		req.Header.Del("Webhook-Timestamp")
		req.Header.Del("Webhook-Signature")
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := webhook.MAC(sha256.New, key, []byte(id+"."+ts+"."), req.Body)
	req.SetHeader(family+"Timestamp", ts)
	req.SetHeader(family+"Signature", "v1,"+base64.StdEncoding.EncodeToString(mac))
	return nil
}

// Check implements webhook.Checker: the tenant has secrets, each "whsec_"
// (or nothing) followed by base64, or a "whpk_" base64 Ed25519 public key,
// and no setting but "type", "conversation" and a positive "tolerance".
// Errors wrap webhook.ErrMisconfigured and name the secret by position,
// never its value.
func (Provider) Check(cfg webhook.Config) error {
	if err := cfg.CheckSettings("standardwebhooks", nil, []string{"type", "conversation", "tolerance"}); err != nil {
		return err
	}
	for i, s := range cfg.Secrets {
		if pk, ok := strings.CutPrefix(s, "whpk_"); ok {
			if key, err := base64.StdEncoding.DecodeString(pk); err != nil || len(key) != ed25519.PublicKeySize {
				return webhook.Errorf(webhook.ErrMisconfigured, "standardwebhooks: secret %d is not a base64 Ed25519 public key", i+1)
			}
			continue
		}
		if key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_")); err != nil || len(key) == 0 {
			return webhook.Errorf(webhook.ErrMisconfigured, "standardwebhooks: secret %d is not whsec_ followed by base64", i+1)
		}
	}
	return nil
}
