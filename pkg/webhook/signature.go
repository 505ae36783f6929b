package webhook

import (
	"encoding/hex"
	"strconv"
	"strings"
	"time"
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

// Stamped names the two headers of a scheme that signs a Unix-seconds
// timestamp with the body: Discord, SendGrid, Zoom, Slack.
type Stamped struct{ Signature, Timestamp string }

// Headers returns the signature and the timestamp of req, both required,
// trimmed. It returns RequiredHeader's errors.
func (s Stamped) Headers(req *Request) (sig, ts string, err error) {
	if sig, err = RequiredHeader(req, s.Signature); err != nil {
		return "", "", err
	}
	if ts, err = RequiredHeader(req, s.Timestamp); err != nil {
		return "", "", err
	}
	return sig, ts, nil
}

// Sign sets the timestamp header to now in Unix seconds and the signature
// header to sign(cfg.Secrets[0], timestamp). It returns an error wrapping
// ErrMisconfigured, naming the provider (name), when cfg has no secrets,
// and sign's errors; on an error it sets nothing.
func (s Stamped) Sign(req *Request, cfg Config, name string, now time.Time, sign func(secret, ts string) (string, error)) error {
	if err := cfg.CheckSecrets(name); err != nil {
		return err
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	sig, err := sign(cfg.Secrets[0], ts)
	if err != nil {
		return err
	}
	req.SetHeader(s.Timestamp, ts)
	req.SetHeader(s.Signature, sig)
	return nil
}
