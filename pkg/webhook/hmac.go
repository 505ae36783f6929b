package webhook

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // required by providers that sign with HMAC-SHA1 (Twilio, legacy GitHub)
	"crypto/sha256"
	"crypto/sha512"
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
	if sec, err := strconv.Atoi(raw); err == nil {
		if sec <= 0 {
			return 0, errorf(ErrMisconfigured, "tolerance %q is not a positive duration", raw)
		}
		return time.Duration(sec) * time.Second, nil
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
