// Package envelope defines the versioned JSON message that the ingest path
// puts on a tenant's FIFO queue and the worker consumes. The format is a
// public contract (documented in the README): fields are only ever added, and
// a breaking change bumps Version.
package envelope

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Version is the envelope format this build writes.
const Version = 1

// ErrInvalid is returned by Decode for messages that are not a valid
// envelope; the worker treats it as a permanent failure.
var ErrInvalid = errors.New("invalid envelope")

// Envelope is one verified, deduplicated event.
type Envelope struct {
	Version int `json:"v"`
	// Key is the idempotency key "{tenant}#{provider}#{eventId}"; the worker's
	// effect ledger is keyed by it, never by the SQS message id.
	Key          string `json:"key"`
	Tenant       string `json:"tenant"`
	Provider     string `json:"provider"`
	EventID      string `json:"eventId"`
	Type         string `json:"type,omitempty"`
	Conversation string `json:"conversation"`
	// ReceivedAt is when the ingest function accepted the delivery (UTC).
	ReceivedAt time.Time `json:"receivedAt"`
	// Body is the verified payload: text when it is valid UTF-8, otherwise
	// base64 with BodyEncoding "base64".
	Body         string            `json:"body"`
	BodyEncoding string            `json:"bodyEncoding,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
}

// SetBody stores b as text, or as base64 when it is not valid UTF-8.
func (e *Envelope) SetBody(b []byte) {
	if utf8.Valid(b) {
		e.Body, e.BodyEncoding = string(b), ""
		return
	}
	e.Body, e.BodyEncoding = base64.StdEncoding.EncodeToString(b), "base64"
}

// RawBody returns the payload bytes exactly as the provider sent them.
func (e *Envelope) RawBody() ([]byte, error) {
	if e.BodyEncoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(e.Body)
		if err != nil {
			return nil, fmt.Errorf("decode body: %w", ErrInvalid)
		}
		return b, nil
	}
	return []byte(e.Body), nil
}

// Encode returns the JSON message body: the fields in the order declared,
// empty optional ones left out, strings escaped as encoding/json escapes them
// with HTML escaping off (it would inflate bodies full of <, > and & toward
// the queue's size limit), ReceivedAt in RFC 3339 with nanoseconds. It is
// byte for byte what json.Encoder with SetEscapeHTML(false) writes, without
// the trailing newline, and returns an error only when ReceivedAt has no RFC
// 3339 form (a year outside 0–9999, a zone offset of a day or more).
func (e *Envelope) Encode() ([]byte, error) {
	b, err := e.AppendJSON(make([]byte, 0, e.sizeHint()))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// AppendJSON appends the encoding Encode returns to dst. On error it returns
// dst unchanged.
func (e *Envelope) AppendJSON(dst []byte) ([]byte, error) {
	orig := dst
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(e.Version), 10)
	dst = appendField(dst, `,"key":`, e.Key)
	dst = appendField(dst, `,"tenant":`, e.Tenant)
	dst = appendField(dst, `,"provider":`, e.Provider)
	dst = appendField(dst, `,"eventId":`, e.EventID)
	if e.Type != "" {
		dst = appendField(dst, `,"type":`, e.Type)
	}
	dst = appendField(dst, `,"conversation":`, e.Conversation)
	dst = append(dst, `,"receivedAt":"`...)
	// AppendText is MarshalJSON without the quotes: the same strict RFC
	// 3339, without an allocation.
	dst, err := e.ReceivedAt.AppendText(dst)
	if err != nil {
		return orig, fmt.Errorf("encode envelope %s: receivedAt: %w", e.Key, err)
	}
	dst = append(dst, '"')
	dst = appendField(dst, `,"body":`, e.Body)
	if e.BodyEncoding != "" {
		dst = appendField(dst, `,"bodyEncoding":`, e.BodyEncoding)
	}
	if len(e.Headers) > 0 {
		// encoding/json writes map keys sorted.
		var buf [8]string
		keys := buf[:0]
		for k := range e.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, `,"headers":{`...)
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = webhook.AppendJSONString(dst, k)
			dst = append(dst, ':')
			dst = webhook.AppendJSONString(dst, e.Headers[k])
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

func appendField(dst []byte, name, value string) []byte {
	return webhook.AppendJSONString(append(dst, name...), value)
}

// sizeHint estimates the encoded size so that Encode allocates once: quotes
// are the escapes JSON bodies are full of, and strings.Count finds them
// faster than a reallocation would copy.
func (e *Envelope) sizeHint() int {
	n := 192 + len(e.Key) + len(e.Tenant) + len(e.Provider) + len(e.EventID) + len(e.Type) + len(e.Conversation) + len(e.BodyEncoding)
	n += len(e.Body) + strings.Count(e.Body, `"`) + len(e.Body)/64
	for k, v := range e.Headers {
		n += len(k) + len(v) + 8
	}
	return n
}

// Decode parses a message body and checks the fields every consumer relies
// on. It returns an error wrapping ErrInvalid.
func Decode(b []byte) (*Envelope, error) {
	var e Envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch {
	case e.Version != Version:
		return nil, fmt.Errorf("%w: version %d, want %d", ErrInvalid, e.Version, Version)
	case e.Key == "" || e.Tenant == "" || e.Provider == "" || e.EventID == "":
		return nil, fmt.Errorf("%w: key, tenant, provider and eventId are required", ErrInvalid)
	case e.BodyEncoding != "" && e.BodyEncoding != "base64":
		return nil, fmt.Errorf("%w: bodyEncoding %q", ErrInvalid, e.BodyEncoding)
	}
	return &e, nil
}
