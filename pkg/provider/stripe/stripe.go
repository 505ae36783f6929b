// Package stripe verifies and parses Stripe webhook deliveries
// (Stripe-Signature, a signed timestamp and one v1 HMAC per endpoint
// secret). docs/providers/stripe.md describes the scheme, the ids and
// conversations derived, and the settings.
package stripe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Retries is what Stripe documents: live-mode events are retried for up to
// three days, and each attempt gets a new signature and timestamp, so its
// default 300-second window holds for every retry.
var Retries = webhook.Retries{
	Signing: webhook.Resigned,
	Horizon: 72 * time.Hour,
	Source:  "https://docs.stripe.com/webhooks#prevent-replay-attacks, https://docs.stripe.com/webhooks#automatic-retries",
	Window:  webhook.Symmetric(300 * time.Second),
}

// Provider implements webhook.Provider for Stripe.
type Provider struct{}

// header is a parsed Stripe-Signature header.
type header struct {
	timestamp string
	v1        [][]byte
}

// parseHeader parses a Stripe-Signature header. Unknown schemes (v0) are
// ignored; undecodable v1 values are skipped. It returns an error wrapping
// webhook.ErrMissingSignature when t= or every v1= is missing, and
// webhook.ErrInvalidSignature when v1= values are present but none is hex.
func parseHeader(h string) (header, error) {
	var out header
	sawV1 := false
	for _, part := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			out.timestamp = v
		case "v1":
			sawV1 = true
			if b, err := hex.DecodeString(v); err == nil && len(b) > 0 {
				out.v1 = append(out.v1, b)
			}
		}
	}
	if out.timestamp == "" {
		return out, webhook.Errorf(webhook.ErrMissingSignature, "Stripe-Signature has no t= timestamp")
	}
	if len(out.v1) == 0 && sawV1 {
		return out, webhook.Errorf(webhook.ErrInvalidSignature, "Stripe-Signature v1= is not hex")
	}
	if len(out.v1) == 0 {
		return out, webhook.Errorf(webhook.ErrMissingSignature, "Stripe-Signature has no v1= signature")
	}
	return out, nil
}

// Verify checks Stripe-Signature against every secret and the timestamp
// against Retries.Window (its Past replaced by a "tolerance" setting). It
// returns an error wrapping
// webhook.ErrMissingSignature (no usable header), webhook.ErrInvalidSignature
// (no secret matches), webhook.ErrStale (genuine but outside the tolerance) or
// webhook.ErrMisconfigured (no secrets, bad tolerance setting).
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	raw := req.Header.Get("Stripe-Signature")
	if raw == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "Stripe-Signature header is required")
	}
	h, err := parseHeader(raw)
	if err != nil {
		return err
	}
	if err := cfg.CheckSecrets("stripe"); err != nil {
		return err
	}
	win, err := Retries.Window.Tenant(cfg)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseInt(h.timestamp, 10, 64); err != nil {
		return webhook.Errorf(webhook.ErrMissingSignature, "Stripe-Signature t= is not Unix seconds")
	}
	// Check the signature before the timestamp so a forged header learns
	// nothing about our clock, but report staleness of a genuine one.
	if !webhook.MatchMAC(sha256.New, cfg.Secrets, h.v1, []byte(h.timestamp+"."), req.Body) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured secret matches a v1 signature")
	}
	return win.CheckUnix(h.timestamp, now)
}

// event holds the members Events reads. related_object is set on thin (v2)
// event notifications, which carry no data.object.
type event struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Account string `json:"account"`
	Data    struct {
		Object struct {
			ID string `json:"id"`
			// Customer is an id string or, when expanded, an object
			// with an id.
			Customer json.RawMessage `json:"customer"`
		} `json:"object"`
	} `json:"data"`
	RelatedObject struct {
		ID string `json:"id"`
	} `json:"related_object"`
}

// defining are the members that make a Stripe event what it is. Stripe
// renders the event again for every delivery attempt, and pending_webhooks
// (how many endpoints still wait for it) changes between attempts: a digest
// of the whole body would answer a retry of an accepted event 409 "id
// reused with a different payload" instead of "duplicate".
type defining struct {
	ID      json.RawMessage `json:"id"`
	Type    json.RawMessage `json:"type"`
	Account json.RawMessage `json:"account"`
	Created json.RawMessage `json:"created"`
	Data    json.RawMessage `json:"data"`
}

// Events returns the single event of a delivery. It returns an error
// wrapping webhook.ErrMalformed when the body is not a Stripe event with an
// id: not JSON, or a member of the wrong type.
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	var e event
	if err := json.Unmarshal(req.Body, &e); err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a Stripe event: %v", err)
	}
	if e.ID == "" {
		return nil, webhook.Errorf(webhook.ErrMalformed, "event has no id")
	}
	var d defining
	_ = json.Unmarshal(req.Body, &d) // the body decoded above: raw members always decode
	conv := customer(e.Data.Object.Customer)
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
		ID:           e.ID,
		Type:         e.Type,
		Conversation: conv,
		Body:         req.Body,
		Headers:      map[string]string{"content-type": req.Header.Get("Content-Type")},
		Defining:     [][]byte{d.ID, d.Type, d.Account, d.Created, d.Data},
	}}, nil
}

// customer reads data.object.customer: an id string, or an expanded object's
// id; "" for anything else.
func customer(raw json.RawMessage) string {
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.ID
	}
	return ""
}

// Sign sets Stripe-Signature to "t=<now>,v1=<hex>" with v1 = HMAC-SHA256 of
// "<t>.<body>" under cfg.Secrets[0], as Stripe signs for one endpoint secret
// (no legacy v0). It returns an error wrapping webhook.ErrMisconfigured when
// the tenant has no secrets.
func (Provider) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	if err := cfg.CheckSecrets("stripe"); err != nil {
		return err
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := webhook.MAC(sha256.New, []byte(cfg.Secrets[0]), []byte(ts+"."), req.Body)
	req.SetHeader("Stripe-Signature", "t="+ts+",v1="+hex.EncodeToString(mac))
	return nil
}

// Check implements webhook.Checker: the tenant has secrets and no setting
// but a positive "tolerance". Errors wrap webhook.ErrMisconfigured.
func (Provider) Check(cfg webhook.Config) error {
	return cfg.CheckSettings("stripe", nil, []string{"tolerance"})
}
