package webhook

import (
	"encoding/hex"
	"strings"
)

// RequiredHeader returns the header name of req with surrounding white
// space trimmed: a signature, a timestamp, a token the scheme requires. It
// returns an error wrapping ErrMissingSignature, naming the header, when it
// is absent or blank.
func RequiredHeader(req *Request, name string) (string, error) {
	v := strings.TrimSpace(req.Header.Get(name))
	if v == "" {
		return "", errorf(ErrMissingSignature, "%s header is required", name)
	}
	return v, nil
}

// HexSignature decodes sig, the value of header, written prefix + hex (a
// prefix such as "sha256=" or "v0=", or none). It returns an error wrapping
// ErrInvalidSignature, naming the header, when the prefix is missing or the
// rest is not hex or empty.
func HexSignature(header, sig, prefix string) ([]byte, error) {
	hexSig, ok := strings.CutPrefix(sig, prefix)
	if !ok {
		return nil, errorf(ErrInvalidSignature, "%s must start with %q", header, prefix)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) == 0 {
		return nil, errorf(ErrInvalidSignature, "%s is not hex", header)
	}
	return got, nil
}
