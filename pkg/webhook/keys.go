package webhook

import (
	"strconv"
	"strings"
)

// Key is one verification key of an asymmetric scheme and the field it
// comes from ("secrets[1]", "settings.public_key"), for errors that name
// it without showing it.
type Key struct {
	Field, Value string
}

// PublicKeys returns the verification keys of an asymmetric scheme
// (Discord, SendGrid): the "public_key" setting, where the sender's
// dashboard value is pasted, then every entry of Secrets, which rotate as
// other senders' secrets do (and may hold a private key, for signing in
// tests and the demo). It returns an error wrapping ErrMisconfigured,
// naming both fields, when there is none.
func (c Config) PublicKeys(name string) ([]Key, error) {
	var keys []Key
	if v := strings.TrimSpace(c.Settings["public_key"]); v != "" {
		keys = append(keys, Key{Field: "settings.public_key", Value: v})
	}
	for i, s := range c.Secrets {
		keys = append(keys, Key{Field: "secrets[" + strconv.Itoa(i) + "]", Value: s})
	}
	if len(keys) == 0 {
		return nil, errorf(ErrMisconfigured, "%s: missing settings.public_key (or secrets)", name)
	}
	return keys, nil
}
