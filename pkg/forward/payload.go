package forward

import (
	"encoding/json"
	"mime"
	"net/url"
	"unicode/utf8"
)

// HeaderOriginalContentType is sent with a delivery whose body is a Wrapped
// document: the provider's Content-Type (application/octet-stream when it
// sent none). Its presence is how a receiver tells a wrapped body from an
// event's own JSON.
const HeaderOriginalContentType = "Hookpack-Original-Content-Type"

// Wrapped is the JSON body of a delivery whose event body is not JSON (a
// form, text, bytes, or nothing), so that every Standard Webhooks library,
// which parses the payload as JSON after checking the signature, accepts
// it. The signature covers this document, as sent.
type Wrapped struct {
	// ContentType is the provider's Content-Type, "" when it sent none.
	ContentType string `json:"contentType"`
	// Form holds the fields of an application/x-www-form-urlencoded body,
	// decoded as Go's url.ParseQuery (and Node's querystring.parse) does:
	// a name sent once maps to its value (a string), a name sent more than
	// once to the array of its values in the order sent. It is absent for
	// other bodies and for a form that does not decode.
	Form map[string]any `json:"form,omitzero"`
	// Raw is the body exactly as the provider sent it (base64 in JSON):
	// what its signature covered, the order of the form's fields, bytes
	// that are not UTF-8.
	Raw []byte `json:"raw"`
}

// Payload returns what a delivery carries for an event body sent with
// contentType: a body that is JSON in UTF-8 as it is, with contentType
// (application/json when empty); any other body as a Wrapped document, with
// "application/json", and wrapped true. The HMAC of every library covers any
// bytes, but the npm standardwebhooks and svix verify calls (and others)
// also JSON-parse the payload and throw on anything else.
func Payload(body []byte, contentType string) (payload []byte, payloadType string, wrapped bool) {
	if utf8.Valid(body) && json.Valid(body) {
		if contentType == "" {
			contentType = "application/json"
		}
		return body, contentType, false
	}
	w := Wrapped{ContentType: contentType, Raw: body}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt == "application/x-www-form-urlencoded" {
		if form, err := url.ParseQuery(string(body)); err == nil {
			w.Form = make(map[string]any, len(form))
			for k, vs := range form {
				if len(vs) == 1 {
					w.Form[k] = vs[0]
				} else {
					w.Form[k] = vs
				}
			}
		}
	}
	if w.Raw == nil {
		w.Raw = []byte{} // "raw": "", not null
	}
	b, err := json.Marshal(w)
	if err != nil {
		// Unreachable: strings, string slices and bytes always encode.
		return body, contentType, false
	}
	return b, "application/json", true
}
