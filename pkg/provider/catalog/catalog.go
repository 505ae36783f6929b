package catalog

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookpack/hookpack/pkg/provider/generic"
	"github.com/hookpack/hookpack/pkg/provider/standardwebhooks"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// Scheme is the engine that verifies a row's deliveries.
type Scheme int

const (
	// HMAC rows are settings of the generic provider (docs/providers/hmac.md).
	HMAC Scheme = iota
	// StandardWebhooks rows are settings of the Standard Webhooks provider
	// (webhook-id, webhook-timestamp, webhook-signature; whsec_ secrets).
	StandardWebhooks
)

// Row is one named sender as data. Its fields are the generic provider's
// settings of the same names (docs/providers/hmac.md); StandardWebhooks
// rows use only Type and Conversation.
type Row struct {
	// Name is the {provider} path segment and the inbound.json key.
	Name   string
	Scheme Scheme

	Header, Algorithm, Encoding, Prefix, Param, Separator, Signed string
	TimestampHeader, TimestampParam, TimestampJSON                string
	ID, Type, Conversation, Defining                              string

	// Retries, on an HMAC row that signs a timestamp, is what the sender
	// documents of its retries; its Window is the one rule for the
	// timestamp (a tenant's "tolerance" replaces Window.Past). Standard
	// Webhooks rows follow standardwebhooks.Retries.
	Retries *webhook.Retries

	// Required are the settings the tenant must give (the public URL the
	// sender signs); the tenant may also give "tolerance" when the row
	// signs a timestamp. Nothing else is the tenant's to set.
	Required []string
}

// settings returns the row as the engine's settings.
func (r *Row) settings() map[string]string {
	all := map[string]string{
		"header": r.Header, "algorithm": r.Algorithm, "encoding": r.Encoding, "prefix": r.Prefix,
		"param": r.Param, "separator": r.Separator, "signed": r.Signed,
		"timestamp_header": r.TimestampHeader, "timestamp_param": r.TimestampParam, "timestamp_json": r.TimestampJSON,
		"id": r.ID, "type": r.Type, "conversation": r.Conversation, "defining": r.Defining,
	}
	for k, v := range all {
		if v == "" {
			delete(all, k)
		}
	}
	return all
}

// timestamped reports whether the row signs a timestamp, so that a tenant
// may set its tolerance.
func (r *Row) timestamped() bool {
	return r.Scheme == StandardWebhooks || r.TimestampHeader != "" || r.TimestampParam != "" || r.TimestampJSON != ""
}

// tenantKeys are the settings a tenant may give for the row.
func (r *Row) tenantKeys() (required, optional []string) {
	if r.timestamped() {
		optional = []string{"tolerance"}
	}
	return r.Required, optional
}

// engine is what a row's scheme provides.
type engine interface {
	webhook.Provider
	webhook.Signer
	webhook.Checker
}

// Sender is the provider of one row: the row's engine under the row's
// settings, plus the tenant's own (Row.Required, "tolerance"). It is safe
// for concurrent use.
type Sender struct {
	row    *Row
	engine engine
	once   sync.Once
	fixed  map[string]string
}

var (
	_ webhook.Provider = (*Sender)(nil)
	_ webhook.Signer   = (*Sender)(nil)
	_ webhook.Checker  = (*Sender)(nil)
)

// New returns the provider of row r. Nothing is built until the sender
// first serves a request: the registry lists every row at cold start, but
// only the senders a tenant configured pay for their settings.
func New(r *Row) *Sender {
	s := &Sender{row: r, engine: generic.Provider{}}
	switch {
	case r.Scheme == StandardWebhooks:
		s.engine = standardwebhooks.Provider{}
	case r.Retries != nil:
		s.engine = generic.Provider{Window: &r.Retries.Window}
	}
	return s
}

// Senders returns a provider per row of Rows, by name.
func Senders() map[string]*Sender {
	out := make(map[string]*Sender, len(Rows))
	for i := range Rows {
		out[Rows[i].Name] = New(&Rows[i])
	}
	return out
}

// Row returns the sender's row.
func (s *Sender) Row() *Row { return s.row }

// config returns cfg's secrets under the row's settings and the tenant's
// own keys (others are ignored here; Check refuses them).
func (s *Sender) config(cfg webhook.Config) webhook.Config {
	s.once.Do(func() { s.fixed = s.row.settings() })
	if len(cfg.Settings) == 0 {
		return webhook.Config{Secrets: cfg.Secrets, Settings: s.fixed}
	}
	merged := make(map[string]string, len(s.fixed)+len(cfg.Settings))
	for k, v := range s.fixed {
		merged[k] = v
	}
	required, optional := s.row.tenantKeys()
	for k, v := range cfg.Settings {
		if v != "" && (slices.Contains(required, k) || slices.Contains(optional, k)) {
			merged[k] = v
		}
	}
	return webhook.Config{Secrets: cfg.Secrets, Settings: merged}
}

// Verify verifies req as the row's engine does; see generic.Provider.Verify
// and standardwebhooks.Provider.Verify for the errors.
func (s *Sender) Verify(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	return s.engine.Verify(req, s.config(cfg), now)
}

// Events parses a verified delivery as the row's engine does.
func (s *Sender) Events(req *webhook.Request, cfg webhook.Config) ([]webhook.Event, error) {
	return s.engine.Events(req, s.config(cfg))
}

// Sign signs req as the sender does (for samples, `make send` and tests).
func (s *Sender) Sign(req *webhook.Request, cfg webhook.Config, now time.Time) error {
	return s.engine.Sign(req, s.config(cfg), now)
}

// Check implements webhook.Checker: the tenant gives secrets, every
// setting the row requires and no setting but those and "tolerance" (where
// a timestamp is signed), and the engine accepts the result. Errors wrap
// webhook.ErrMisconfigured and name the sender and the fields.
func (s *Sender) Check(cfg webhook.Config) error {
	required, optional := s.row.tenantKeys()
	if err := cfg.CheckSettings(s.row.Name, required, optional); err != nil {
		return err
	}
	if err := s.engine.Check(s.config(cfg)); err != nil {
		return webhook.Errorf(webhook.ErrMisconfigured, "%s: %s", s.row.Name, strings.TrimPrefix(err.Error(), webhook.ErrMisconfigured.Error()+": "))
	}
	return nil
}
