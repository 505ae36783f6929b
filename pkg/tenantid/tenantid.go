// Package tenantid holds the rules of a tenant id, shared by every package
// that takes one (ingest, the ledger, the tenant store, inspect): a leaf, so
// checking an id links nothing else.
package tenantid

import (
	"errors"
	"fmt"
)

// ErrInvalid: the tenant id fails Validate.
var ErrInvalid = errors.New("invalid tenant id")

// MaxLen keeps "<stack>_<tenant>-dlq.fifo" within SQS's 80-character
// queue name limit with room for a stack prefix.
const MaxLen = 40

// Validate checks a tenant id before any lookup: 1–40 characters of
// lower-case letters, digits and '-', starting with a letter or digit. The
// id becomes part of queue names, parameter paths and idempotency keys, so
// nothing else is allowed in. Its error wraps ErrInvalid.
func Validate(id string) error {
	if id == "" || len(id) > MaxLen {
		return fmt.Errorf("%w: must be 1-%d characters", ErrInvalid, MaxLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0) {
			return fmt.Errorf("%w: only a-z, 0-9 and '-' (not first) are allowed", ErrInvalid)
		}
	}
	return nil
}
