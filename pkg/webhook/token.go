package webhook

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
)

// MatchToken reports whether got equals one of secrets: the check of the
// schemes whose "signature" is a shared token (GitLab, Telegram) or basic
// auth credentials (Postmark, Chargebee). It compares SHA-256 digests, so
// every secret is compared in constant time whatever its length, and timing
// reveals neither which secret matched nor how long any is. An empty got
// never matches.
func MatchToken(secrets []string, got string) bool {
	if got == "" {
		return false
	}
	g := sha256.Sum256([]byte(got))
	ok := 0
	for _, s := range secrets {
		w := sha256.Sum256([]byte(s))
		ok |= subtle.ConstantTimeCompare(g[:], w[:])
	}
	return ok == 1
}

// BasicAuth returns "user:password" from an Authorization header of the
// Basic scheme, as the secrets of basic-auth senders are written. It returns
// an error wrapping ErrMissingSignature when the header is absent and
// ErrInvalidSignature when it is not canonical base64 Basic credentials.
func BasicAuth(req *Request) (string, error) {
	h := strings.TrimSpace(req.Header.Get("Authorization"))
	if h == "" {
		return "", errorf(ErrMissingSignature, "Authorization header with basic auth credentials is required")
	}
	scheme, enc, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Basic") {
		return "", errorf(ErrInvalidSignature, "Authorization must use the Basic scheme")
	}
	raw, ok := DecodeBase64(base64.StdEncoding, strings.TrimSpace(enc))
	if !ok || !strings.Contains(string(raw), ":") {
		return "", errorf(ErrInvalidSignature, "Authorization is not base64 user:password")
	}
	return string(raw), nil
}

// SetBasicAuth sets the Authorization header of req to Basic credentials
// for userPass ("user:password").
func SetBasicAuth(req *Request, userPass string) {
	req.SetHeader("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(userPass)))
}
