package tenant

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/hookpack/hookpack/pkg/tenantid"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// File is the local tenants file (default events/tenants.json, path in
// TENANTS_FILE) that `make run` loads into the emulated Parameter Store.
//
//	{"tenants": {"acme": {"providers": {"github": {"secrets": ["…"]}},
//	                      "outbound": {"targetUrl": "…", "secrets": ["whsec_…"]}}}}
type File struct {
	Tenants map[string]FileTenant `json:"tenants"`
}

// FileTenant is one tenant in a File.
type FileTenant struct {
	Inbound
	Outbound Outbound `json:"outbound"`
}

// LoadFile reads and validates a tenants file (tenantid.Validate,
// Inbound.Validate against providers, Outbound.ValidateWith). Errors name the
// file, the tenant and the field, never a secret.
func LoadFile(path string, providers webhook.Registry) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tenants file: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("tenants file %s: %w", path, err)
	}
	for _, id := range f.IDs() {
		if err := tenantid.Validate(id); err != nil {
			return nil, fmt.Errorf("tenants file %s: tenant %q: %w", path, id, err)
		}
		if len(f.Tenants[id].Providers) == 0 {
			return nil, fmt.Errorf("tenants file %s: tenant %q enables no provider", path, id)
		}
		if err := f.Tenants[id].Inbound.Validate(id, providers); err != nil {
			return nil, fmt.Errorf("tenants file %s: %w", path, err)
		}
		in := f.Tenants[id].Inbound
		if err := f.Tenants[id].Outbound.ValidateWith(id, providers, &in); err != nil {
			return nil, fmt.Errorf("tenants file %s: %w", path, err)
		}
	}
	return &f, nil
}

// IDs returns the tenant ids in sorted order.
func (f *File) IDs() []string {
	return slices.Sorted(maps.Keys(f.Tenants))
}
