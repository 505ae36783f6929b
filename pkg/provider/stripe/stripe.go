// Package stripe verifies and parses Stripe webhook deliveries.
//
// Signature: Stripe-Signature = "t=<unix>,v1=<hex>[,v1=<hex>…][,v0=…]", where
// v1 = hex HMAC-SHA256(secret, "<t>.<body>"). Any v1 may match any configured
// secret (Stripe sends one v1 per active endpoint secret while you roll one).
// Deliveries older or newer than the tolerance (default 300 s, Stripe's own)
// are rejected as replays.
// Id: the event's "id" (evt_…). Conversation: the connected account (when
// present) plus data.object.customer, falling back to data.object.id (and to
// related_object.id for thin v2 events), so all events about one customer (or
// one object) are processed in order.
//
// Settings: "tolerance" (seconds or a Go duration).
package stripe

import (
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// DefaultTolerance is Stripe's documented default replay window.
const DefaultTolerance = 300 * time.Second

// Provider implements webhook.Provider for Stripe.
type Provider struct{}

var _ webhook.Provider = Provider{}

var sha256New, _ = webhook.Hash("sha256")

// Header is a parsed Stripe-Signature header.
type Header struct {
	Timestamp string
	V1        [][]byte
}

// ParseHeader parses a Stripe-Signature header. Unknown schemes (v0) are
// ignored; undecodable v1 values are skipped. It returns an error wrapping
// webhook.ErrMissingSignature when t= or every v1= is missing, and
// webhook.ErrInvalidSignature when v1= values are present but none is hex.
func ParseHeader(h string) (Header, error) {
	var out Header
	sawV1 := false
	for _, part := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			out.Timestamp = v
		case "v1":
			sawV1 = true
			if b, err := hex.DecodeString(v); err == nil && len(b) > 0 {
				out.V1 = append(out.V1, b)
			}
		}
	}
	if out.Timestamp == "" {
		return out, webhook.Errorf(webhook.ErrMissingSignature, "Stripe-Signature has no t= timestamp")
	}
	if len(out.V1) == 0 && sawV1 {
		return out, webhook.Errorf(webhook.ErrInvalidSignature, "Stripe-Signature v1= is not hex")
	}
	if len(out.V1) == 0 {
		return out, webhook.Errorf(webhook.ErrMissingSignature, "Stripe-Signature has no v1= signature")
	}
	return out, nil
}

// Verify checks Stripe-Signature against every secret and the timestamp
// against the tolerance. It returns an error wrapping
// webhook.ErrMissingSignature (no usable header), webhook.ErrInvalidSignature
// (no secret matches), webhook.ErrStale (genuine but outside the tolerance) or
// webhook.ErrMisconfigured (no secrets, bad tolerance setting).
func (Provider) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	raw := req.Header.Get("Stripe-Signature")
	if raw == "" {
		return webhook.Errorf(webhook.ErrMissingSignature, "Stripe-Signature header is required")
	}
	h, err := ParseHeader(raw)
	if err != nil {
		return err
	}
	if len(cfg.Secrets) == 0 {
		return webhook.Errorf(webhook.ErrMisconfigured, "stripe: no secrets configured")
	}
	tol, err := webhook.ParseTolerance(cfg.Settings["tolerance"], DefaultTolerance)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseInt(h.Timestamp, 10, 64); err != nil {
		return webhook.Errorf(webhook.ErrMissingSignature, "Stripe-Signature t= is not Unix seconds")
	}
	// Check the signature before the timestamp so a forged header learns
	// nothing about our clock, but report staleness of a genuine one.
	if !webhook.MatchMAC(sha256New, cfg.Secrets, h.V1, []byte(h.Timestamp+"."), req.Body) {
		return webhook.Errorf(webhook.ErrInvalidSignature, "no configured secret matches a v1 signature")
	}
	_, err = webhook.CheckTimestamp(h.Timestamp, now, tol)
	return err
}

// eventPaths are the members Events reads, in one pass over the body.
// related_object is set on thin (v2) event notifications, which carry no
// data.object.
var eventPaths = webhook.NewPaths("", "id", "type", "account", "data", "data.object", "data.object.id",
	"data.object.customer", "data.object.customer.id", "related_object", "related_object.id")

const (
	pRoot = iota
	pID
	pType
	pAccount
	pData
	pObject
	pObjectID
	pCustomer
	pCustomerID
	pRelated
	pRelatedID
	nPaths
)

// Events returns the single event of a delivery. It returns an error
// wrapping webhook.ErrMalformed when the body is not a Stripe event with an
// id: not JSON, or a member of the wrong type (what decoding into a struct
// would refuse).
func (Provider) Events(req *webhook.Request, _ webhook.Config) ([]webhook.Event, error) {
	var buf [nPaths]webhook.Value
	v, err := eventPaths.Scan(req.Body, buf[:0])
	if err != nil {
		return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a Stripe event: %v", err)
	}
	for _, i := range [...]int{pRoot, pData, pObject, pRelated} {
		if k := v[i].Kind; k != webhook.KindObject && k != webhook.KindNull && k != webhook.KindMissing {
			return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a Stripe event: %s is a %s, not an object", name(i), k)
		}
	}
	var s [nPaths]string
	for _, i := range [...]int{pID, pType, pAccount, pObjectID, pRelatedID} {
		var ok bool
		if s[i], ok = v[i].AsString(); !ok {
			return nil, webhook.Errorf(webhook.ErrMalformed, "body is not a Stripe event: %s is a %s, not a string", name(i), v[i].Kind)
		}
	}
	if s[pID] == "" {
		return nil, webhook.Errorf(webhook.ErrMalformed, "event has no id")
	}
	conv := customer(v[pCustomer], v[pCustomerID])
	if conv == "" {
		conv = s[pObjectID]
	}
	if conv == "" {
		conv = s[pRelatedID]
	}
	switch account := s[pAccount]; {
	case account != "" && conv != "":
		conv = account + "/" + conv
	case account != "":
		conv = account
	}
	return []webhook.Event{{
		ID:           s[pID],
		Type:         s[pType],
		Conversation: conv,
		Body:         req.Body,
		Headers:      map[string]string{"content-type": req.Header.Get("Content-Type")},
	}}, nil
}

// name returns the path of eventPaths index i for error messages.
func name(i int) string {
	if i == pRoot {
		return "the body"
	}
	return [nPaths]string{pID: "id", pType: "type", pAccount: "account", pData: "data", pObject: "data.object",
		pObjectID: "data.object.id", pRelated: "related_object", pRelatedID: "related_object.id"}[i]
}

// customer reads data.object.customer, which is an id string or, when
// expanded, an object with an id.
func customer(c, id webhook.Value) string {
	switch c.Kind {
	case webhook.KindString:
		return c.Text()
	case webhook.KindObject:
		s, _ := id.AsString()
		return s
	}
	return ""
}
