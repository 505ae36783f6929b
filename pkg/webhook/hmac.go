package webhook

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // required by providers that sign with HMAC-SHA1 (Twilio, legacy GitHub)
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
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
// wants for any of secrets. Like MatchAny it computes and compares every
// MAC, in constant time with respect to the contents, so timing does not
// reveal which secret or signature matched; it allocates only what hmac.New
// does, since the hot path calls it for every delivery.
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

// AppendHex appends the bytes that s spells in hexadecimal (either case) to
// dst: hex.DecodeString without its allocation. ok is false when s is not
// hex or has an odd length.
func AppendHex(dst []byte, s string) ([]byte, bool) {
	if len(s)%2 != 0 {
		return dst, false
	}
	for i := 0; i < len(s); i += 2 {
		hi, ok1 := fromHex(s[i])
		lo, ok2 := fromHex(s[i+1])
		if !ok1 || !ok2 {
			return dst, false
		}
		dst = append(dst, hi<<4|lo)
	}
	return dst, true
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// MatchAny reports whether any candidate equals want, comparing in constant
// time with respect to the contents. It checks every candidate, so timing
// does not reveal which one matched.
func MatchAny(want []byte, candidates [][]byte) bool {
	ok := 0
	for _, c := range candidates {
		ok |= boolInt(hmac.Equal(want, c))
	}
	return ok == 1
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CheckTimestamp parses a Unix-seconds timestamp and checks it lies within
// tolerance of now in either direction. It returns the parsed time or an
// error wrapping ErrMalformed or ErrStale.
func CheckTimestamp(raw string, now time.Time, tolerance time.Duration) (time.Time, error) {
	sec, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil {
		return time.Time{}, errorf(ErrMissingSignature, "timestamp %q is not Unix seconds", truncate(raw, 32))
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return ts, errorf(ErrStale, "timestamp is %s away from now, tolerance %s", d.Round(time.Second), tolerance)
	}
	return ts, nil
}

// ParseTolerance parses a duration setting ("300s", "5m", or plain seconds).
func ParseTolerance(raw string, def time.Duration) (time.Duration, error) {
	if raw == "" {
		return def, nil
	}
	// Plain seconds; anything with a unit skips Atoi, whose error allocates.
	if c := raw[len(raw)-1]; '0' <= c && c <= '9' {
		if sec, err := strconv.Atoi(raw); err == nil {
			if sec <= 0 {
				return 0, errorf(ErrMisconfigured, "tolerance %q is not a positive duration", raw)
			}
			return time.Duration(sec) * time.Second, nil
		}
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 {
		return 0, errorf(ErrMisconfigured, "tolerance %q is not a positive duration", raw)
	}
	return d, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
