package forward

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks header names, and the downstream idempotency header.
const (
	HeaderID             = "webhook-id"
	HeaderTimestamp      = "webhook-timestamp"
	HeaderSignature      = "webhook-signature"
	HeaderIdempotencyKey = "Idempotency-Key"
)

// secretPrefix marks a Standard Webhooks symmetric secret.
const secretPrefix = "whsec_"

// ErrInvalidSecret: a configured secret is not "whsec_" (optional) followed
// by base64. The error never contains the secret.
var ErrInvalidSecret = errors.New("invalid signing secret")

// MessageID returns the webhook-id of an event: "msg_" and the first 128
// bits of the SHA-256 of its idempotency key, in hex. It is stable across attempts, redeliveries and
// replays, so the receiver can deduplicate by it, and it does not reveal the
// tenant or the provider's event id.
func MessageID(eventKey string) string {
	sum := sha256.Sum256([]byte(eventKey))
	return "msg_" + hex.EncodeToString(sum[:16])
}

// Sign returns the webhook-signature header value for id, ts and body: one
// "v1,<signature>" per secret, space-separated, in the order given. It
// returns an error wrapping ErrInvalidSecret, naming the secret's position
// only.
func Sign(id string, ts time.Time, body []byte, secrets []string) (string, error) {
	if len(secrets) == 0 {
		return "", fmt.Errorf("%w: no secret configured", ErrInvalidSecret)
	}
	sigs := make([]string, len(secrets))
	for i, s := range secrets {
		key, err := decodeSecret(s)
		if err != nil {
			return "", fmt.Errorf("secret %d: %w", i+1, err)
		}
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body))
	}
	return strings.Join(sigs, " "), nil
}

func mac(key []byte, id string, ts int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(strconv.FormatInt(ts, 10)))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

func decodeSecret(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, secretPrefix))
	if err != nil || len(key) == 0 {
		return nil, ErrInvalidSecret
	}
	return key, nil
}
