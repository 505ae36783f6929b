package tenant

import (
	"errors"
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

// LoadFile reads and validates a tenants file as scripts/tenant/check
// validates a tenant's files: Decode (unknown fields by their path, a field
// of the wrong type, data after the document), tenantid.Validate,
// Inbound.Validate against providers, Outbound.ValidateWith. It returns the
// file, or nil and errors.Join of every problem, each naming the file, the
// tenant and the field, never a secret.
func LoadFile(path string, providers webhook.Registry) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tenants file: %w", err)
	}
	var f File
	name := "tenants file " + path
	errs := []error{Decode(name, b, &f)}
	for _, id := range f.IDs() {
		t := f.Tenants[id]
		if err := tenantid.Validate(id); err != nil {
			errs = append(errs, fmt.Errorf("%s: tenant %q: %w", name, id, err))
		}
		if len(t.Providers) == 0 {
			errs = append(errs, fmt.Errorf("%s: tenant %q enables no provider", name, id))
		}
		if err := t.Inbound.Validate(id, providers); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		if err := t.Outbound.ValidateWith(id, providers, &t.Inbound); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &f, nil
}

// IDs returns the tenant ids in sorted order.
func (f *File) IDs() []string {
	return slices.Sorted(maps.Keys(f.Tenants))
}
