package webhook

import "time"

// Signer is implemented by providers that can produce their own scheme's
// signature, so tooling (make events, tests, replays against a live stack)
// can re-sign a sample delivery with a tenant's secret at the current time.
// The ingest path never signs.
//
// Sign sets on req the headers the scheme carries (the signature and
// whatever else it signs, such as a timestamp header or, for Twilio, the
// bodySHA256 query parameter), computed over req exactly as Verify reads it,
// with cfg.Secrets[0] and, for timestamped schemes, now. Afterwards
// Verify(req, cfg, now) succeeds. Sign replaces earlier signature headers
// rather than adding to them, never changes req.Body (but for a scheme that
// carries its signature inside the body, Mailgun, whose Sign rewrites that
// part only), and only writes to req, so it is safe for concurrent use on
// distinct requests.
//
// It returns an error wrapping ErrMisconfigured when cfg has no secret or its
// settings cannot produce a signature (a public key, an unknown algorithm),
// and ErrMalformed when req lacks something the scheme signs (a message id,
// a parsable form body, an absolute URL).
type Signer interface {
	Sign(req *Request, cfg Config, now time.Time) error
}
