// Package envelope defines the versioned JSON message that the ingest path
// puts on a tenant's FIFO queue and the worker consumes. The format is a
// public contract (documented in the README): fields are only ever added, and
// a breaking change bumps Version.
package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
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
// empty optional ones left out, no trailing newline, and HTML escaping off (it
// would inflate bodies full of <, > and & toward the queue's size limit). It
// returns an error only when ReceivedAt has no RFC 3339 form (a year outside
// 0–9999, a zone offset of a day or more).
func (e *Envelope) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("encode envelope %s: %w", e.Key, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
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
