package senders

import (
	"testing"

	"github.com/hookpack/hookpack/pkg/provider/providertest"
)

// Modules returns the senders' npm libraries (providertest.SenderModules).
func Modules(t testing.TB) string {
	t.Helper()
	return providertest.SenderModules(t)
}
