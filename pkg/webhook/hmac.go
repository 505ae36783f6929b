package webhook

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // required by providers that sign with HMAC-SHA1 (Twilio, legacy GitHub)
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"strconv"
	"strings"
	"time"
)

// HashFunc names a hash constructor for HMAC.
type HashFunc func() hash.Hash

// Hash returns the hash constructor for "sha256", "sha1" or "sha512".
func Hash(name string) (HashFunc, bool) {
	switch strings.ToLower(name) {
	case "sha256", "":
		return sha256.New, true
	case "sha1":
		return sha1.New, true
	case "sha512":
		return sha512.New, true
	}
	return nil, false
}

// MAC returns HMAC(secret, parts...) with the given hash.
func MAC(h HashFunc, secret []byte, parts ...[]byte) []byte {
	m := hmac.New(h, secret)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// MatchMAC reports whether HMAC(secret, parts...) with hash h equals one of
// wants for any of secrets. It computes and compares every MAC, in constant
// time with respect to the contents, so timing does not reveal which secret
// or signature matched.
func MatchMAC(h HashFunc, secrets []string, wants [][]byte, parts ...[]byte) bool {
	ok := 0
	var sum [sha512.Size]byte
	for _, s := range secrets {
		m := hmac.New(h, []byte(s))
		for _, p := range parts {
			m.Write(p)
		}
		mac := m.Sum(sum[:0])
		for _, w := range wants {
			ok |= subtle.ConstantTimeCompare(mac, w)
		}
	}
	return ok == 1
}

// BodyHMAC is a header holding Prefix + hex HMAC-SHA256(secret, raw body),
// with no timestamp signed: GitHub's and Meta's X-Hub-Signature-256
// (HubSignature), Asana's and Dropbox's (no prefix) and Notion's. Providers
// call its Verify and Sign; now is unused.
type BodyHMAC struct{ Header, Prefix string }

// Verify checks the header against every secret in constant time. It
// returns an error wrapping ErrMissingSignature when the header is absent,
// ErrInvalidSignature when it is malformed or no secret matches, and
// ErrMisconfigured when the tenant has no secrets.
func (b BodyHMAC) Verify(req *Request, cfg Config, _ time.Time) error {
	sig, err := RequiredHeader(req, b.Header)
	if err != nil {
		return err
	}
	got, err := HexSignature(b.Header, sig, b.Prefix)
	if err != nil {
		return err
	}
	if err := cfg.CheckSecrets(b.Header); err != nil {
		return err
	}
	if !MatchMAC(sha256.New, cfg.Secrets, [][]byte{got}, req.Body) {
		return errorf(ErrInvalidSignature, "no configured secret matches %s", b.Header)
	}
	return nil
}

// Sign sets the header with cfg.Secrets[0], as Verify checks it. It returns
// an error wrapping ErrMisconfigured when the tenant has no secrets.
func (b BodyHMAC) Sign(req *Request, cfg Config, _ time.Time) error {
	if err := cfg.CheckSecrets(b.Header); err != nil {
		return err
	}
	req.SetHeader(b.Header, b.Prefix+hex.EncodeToString(MAC(sha256.New, []byte(cfg.Secrets[0]), req.Body)))
	return nil
}

// hub is X-Hub-Signature-256.
var hub = BodyHMAC{Header: "X-Hub-Signature-256", Prefix: "sha256="}

// HubSignature is X-Hub-Signature-256, "sha256=" + hex HMAC-SHA256(secret,
// raw body): the scheme GitHub and Meta (WhatsApp) share. Their providers
// embed it for Verify and Sign, which are BodyHMAC's (Meta's GET handshake
// is unsigned: it carries a verify token instead).
type HubSignature struct{}

// Verify is BodyHMAC.Verify for X-Hub-Signature-256.
func (HubSignature) Verify(req *Request, cfg Config, now time.Time) error {
	return hub.Verify(req, cfg, now)
}

// Sign is BodyHMAC.Sign for X-Hub-Signature-256.
func (HubSignature) Sign(req *Request, cfg Config, now time.Time) error {
	return hub.Sign(req, cfg, now)
}

// CheckTimestamp parses a Unix-seconds timestamp and checks it lies within
// tolerance of now in either direction. It returns the parsed time or an
// error wrapping ErrMalformed or ErrStale.
func CheckTimestamp(raw string, now time.Time, tolerance time.Duration) (time.Time, error) {
	ts, err := unixSeconds(raw)
	if err != nil {
		return time.Time{}, err
	}
	return ts, CheckTime(ts, now, tolerance)
}

// unixSeconds parses a Unix-seconds timestamp. It returns an error wrapping
// ErrMissingSignature when raw is not one.
func unixSeconds(raw string) (time.Time, error) {
	sec, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil {
		return time.Time{}, errorf(ErrMissingSignature, "timestamp %q is not Unix seconds", Truncate(raw, 32))
	}
	return time.Unix(sec, 0), nil
}

// CheckTime checks that a signed time lies within tolerance of now in
// either direction. It returns nil or an error wrapping ErrStale.
func CheckTime(ts, now time.Time, tolerance time.Duration) error {
	return Symmetric(tolerance).Check(ts, now)
}

// MaxTolerance bounds a "tolerance" setting: the dedup retention
// (idempotency.DefaultRetention, which a test holds it to). A signed
// timestamp accepted after its first delivery's claim expired would be
// worked twice.
const MaxTolerance = 7 * 24 * time.Hour

// ParseTolerance parses a duration setting ("300s", "5m", or plain seconds).
// It returns an error wrapping ErrMisconfigured when raw is not a positive
// duration below MaxTolerance.
func ParseTolerance(raw string, def time.Duration) (time.Duration, error) {
	if raw == "" {
		return def, nil
	}
	// Plain seconds; anything with a unit skips Atoi, whose error allocates.
	d := time.Duration(-1)
	if c := raw[len(raw)-1]; '0' <= c && c <= '9' {
		if sec, err := strconv.Atoi(raw); err == nil {
			d = time.Duration(sec) * time.Second
		}
	}
	if d < 0 {
		var err error
		if d, err = time.ParseDuration(raw); err != nil {
			d = 0
		}
	}
	switch {
	case d <= 0:
		return 0, errorf(ErrMisconfigured, "tolerance %q is not a positive duration", raw)
	case d >= MaxTolerance:
		return 0, errorf(ErrMisconfigured, "tolerance %q reaches the dedup retention %s", raw, MaxTolerance)
	}
	return d, nil
}

// Truncate returns s cut to n bytes with "…" when longer: for untrusted
// values quoted in errors and logs, whose every byte is shown and billed.
func Truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// DecodeBase64 decodes one base64 signature in enc, strictly: no line breaks
// (encoding/base64 skips \r and \n) and no stray bits in the last character,
// so a MAC has exactly one accepted spelling. ok is false when s is empty or
// not canonical base64.
func DecodeBase64(enc *base64.Encoding, s string) (b []byte, ok bool) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, false
	}
	b, err := enc.Strict().DecodeString(s)
	return b, err == nil && len(b) > 0
}
