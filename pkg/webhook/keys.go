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

// CheckPublicKeys is the Check of an asymmetric scheme: PublicKeys, each
// accepted by valid, and no setting but public_key and optional;
// settings.public_key alone is a complete entry. It returns an error
// wrapping ErrMisconfigured that names the field and what it must be
// (what), never its value.
func CheckPublicKeys(c Config, name, what string, valid func(key string) bool, optional ...string) error {
	keys, err := c.PublicKeys(name)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !valid(k.Value) {
			return errorf(ErrMisconfigured, "%s: %s is not %s", name, k.Field, what)
		}
	}
	if len(c.Secrets) == 0 {
		c.Secrets = []string{keys[0].Value}
	}
	return c.CheckSettings(name, nil, append([]string{"public_key"}, optional...))
}

// VerifyPublicKeys reports whether verify accepts the signature under one
// of c's PublicKeys; verify parses the key (valid) and checks the signature
// with it (verified). Every key is tried: a public key is no secret, but
// timing then does not depend on which entry verified.
// It returns an error wrapping ErrMisconfigured when there is no key or
// one does not parse (naming the field and what it must be, never its
// value).
func VerifyPublicKeys(c Config, name, what string, verify func(key string) (verified, valid bool)) (bool, error) {
	keys, err := c.PublicKeys(name)
	if err != nil {
		return false, err
	}
	ok := false
	for _, k := range keys {
		verified, valid := verify(k.Value)
		if !valid {
			return false, errorf(ErrMisconfigured, "%s: %s is not %s", name, k.Field, what)
		}
		ok = verified || ok
	}
	return ok, nil
}
