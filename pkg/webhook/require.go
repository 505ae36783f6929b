package webhook

import (
	"strconv"
	"strings"
)

// Require returns nil when c has at least one secret and every named
// setting, else an error wrapping ErrMisconfigured that names the provider
// and every missing field ("secrets", "settings.<key>"), never a value: the
// Check of most senders (see Checker).
func (c Config) Require(name string, settings ...string) error {
	var missing []string
	if len(c.Secrets) == 0 {
		missing = append(missing, "secrets")
	}
	for _, s := range c.Secrets {
		if strings.TrimSpace(s) == "" {
			missing = append(missing, "secrets (an empty entry)")
			break
		}
	}
	for _, k := range settings {
		if strings.TrimSpace(c.Settings[k]) == "" {
			missing = append(missing, "settings."+k)
		}
	}
	if len(missing) > 0 {
		return errorf(ErrMisconfigured, "%s: missing %s", name, strings.Join(missing, ", "))
	}
	return nil
}

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
