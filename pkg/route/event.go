package route

import (
	"bytes"
	"encoding/json"
	"io"
)

// Event is what filters look at: the sender (provider name), the event
// type and the body as forwarded. Its body is decoded on the first filter
// with conditions and kept for the others. An Event is not safe for
// concurrent use.
type Event struct {
	Provider, Type string
	Body           []byte

	decoded bool
	doc     any
	json    bool
}

// NewEvent returns the event of provider and eventType with body.
func NewEvent(provider, eventType string, body []byte) *Event {
	return &Event{Provider: provider, Type: eventType, Body: body}
}

// document returns the body decoded (numbers as json.Number), and false
// when it is not exactly one JSON document.
func (e *Event) document() (any, bool) {
	if !e.decoded {
		e.decoded = true
		dec := json.NewDecoder(bytes.NewReader(e.Body))
		dec.UseNumber()
		if err := dec.Decode(&e.doc); err == nil {
			_, err = dec.Token()
			e.json = err == io.EOF
		}
	}
	return e.doc, e.json
}
