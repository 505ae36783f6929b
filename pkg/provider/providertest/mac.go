package providertest

import (
	"crypto/hmac"
	"hash"
)

// MAC returns the HMAC (RFC 2104) with hash h under key of the parts
// written one after the other: the construction every HMAC scheme signs,
// spelled out as the providers' documentation states it. Tests compute
// expected signatures with it, independently of the adapters' own signing
// code, and encode the result as the scheme does (hex, base64, a prefix).
func MAC(h func() hash.Hash, key string, parts ...string) []byte {
	m := hmac.New(h, []byte(key))
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}
