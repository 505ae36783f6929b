// Package envelope defines the versioned JSON message that the ingest path
// puts on a tenant's FIFO queue and the worker consumes. The format is a
// public contract (documented in docs/architecture.md): fields are only ever added, and
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
	// Body is the verified payload, stored on the wire as BodyEncoding
	// says: "json" (a valid JSON document in UTF-8 without surrounding
	// whitespace) as the JSON value itself, byte for byte, so it takes no
	// escaping; "" (other UTF-8 text) as a JSON string; "base64" (anything
	// else) as a base64 string.
	Body         string            `json:"-"`
	BodyEncoding string            `json:"bodyEncoding,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
}

// Body encodings.
const (
	EncodingJSON   = "json"
	EncodingBase64 = "base64"
)

// SetBody stores b as raw JSON, as text, or as base64 (see Body).
func (e *Envelope) SetBody(b []byte) {
	switch {
	case !utf8.Valid(b):
		e.Body, e.BodyEncoding = base64.StdEncoding.EncodeToString(b), EncodingBase64
	case len(b) > 0 && !isSpace(b[0]) && !isSpace(b[len(b)-1]) && json.Valid(b):
		e.Body, e.BodyEncoding = string(b), EncodingJSON
	default:
		e.Body, e.BodyEncoding = string(b), ""
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// RawBody returns the payload bytes exactly as the provider sent them.
func (e *Envelope) RawBody() ([]byte, error) {
	if e.BodyEncoding == EncodingBase64 {
		b, err := base64.StdEncoding.DecodeString(e.Body)
		if err != nil {
			return nil, fmt.Errorf("decode body: %w", ErrInvalid)
		}
		return b, nil
	}
	return []byte(e.Body), nil
}

// wire is the envelope as encoded: body last, as a raw JSON value.
type wire struct {
	*fields
	Body json.RawMessage `json:"body"`
}

// fields is Envelope without its methods (and without Body, which is
// json:"-").
type fields Envelope

// Encode returns the JSON message body: the fields in the order declared,
// body last, empty optional ones left out, no trailing newline, and HTML
// escaping off (it would inflate bodies full of <, > and & toward the
// queue's size limit). A JSON body is written byte for byte. It returns an
// error when ReceivedAt has no RFC 3339 form (a year outside 0–9999, a zone
// offset of a day or more) or a body marked "json" is not valid JSON.
func (e *Envelope) Encode() ([]byte, error) {
	w := wire{fields: (*fields)(e), Body: json.RawMessage("0")}
	if e.BodyEncoding != EncodingJSON {
		w.Body = appendString(nil, e.Body)
	} else if !json.Valid([]byte(e.Body)) {
		return nil, fmt.Errorf("encode envelope %s: body marked json is not: %w", e.Key, ErrInvalid)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("encode envelope %s: %w", e.Key, err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if e.BodyEncoding == EncodingJSON {
		// The encoder compacts raw values; splice the body in as it is,
		// in place of the placeholder that ends the object.
		out = append(append(bytes.TrimSuffix(out, []byte("0}")), e.Body...), '}')
	}
	return out, nil
}

// appendString appends s as a JSON string, HTML escaping off.
func appendString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// Decode parses a message body and checks the fields every consumer relies
// on. It returns an error wrapping ErrInvalid.
func Decode(b []byte) (*Envelope, error) {
	var e Envelope
	w := wire{fields: (*fields)(&e)}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch {
	case e.Version != Version:
		return nil, fmt.Errorf("%w: version %d, want %d", ErrInvalid, e.Version, Version)
	case e.Key == "" || e.Tenant == "" || e.Provider == "" || e.EventID == "":
		return nil, fmt.Errorf("%w: key, tenant, provider and eventId are required", ErrInvalid)
	case e.BodyEncoding == EncodingJSON:
		e.Body = string(w.Body)
	case e.BodyEncoding != "" && e.BodyEncoding != EncodingBase64:
		return nil, fmt.Errorf("%w: bodyEncoding %q", ErrInvalid, e.BodyEncoding)
	case len(w.Body) > 0:
		if err := json.Unmarshal(w.Body, &e.Body); err != nil {
			return nil, fmt.Errorf("%w: body: %v", ErrInvalid, err)
		}
	}
	return &e, nil
}
