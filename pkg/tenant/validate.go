package tenant

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// ErrInvalid: a tenant's stored configuration cannot be used (an empty
// secret, a malformed URL, an unknown provider). Errors wrapping it name the
// tenant and the field, never a secret or a setting's value.
var ErrInvalid = errors.New("invalid tenant configuration")

// Validate checks the inbound configuration of tenant id (one that enables
// no provider is valid, and answers 404 for every provider): every provider is
// one of providers (the build's provider.Registry; passed in so that packages
// reading only outbound credentials, like the worker, link no adapter), has
// at least one secret (unless its webhook.Checker accepts the entry without:
// a public key setting, an onboarding handshake) and no empty one, every URL
// setting ("url", "…_url")
// is an absolute http(s) URL, and providers that check their own settings
// accept them. It returns nil, or errors.Join of one error wrapping
// ErrInvalid per field at fault, each naming the tenant and the field.
func (in Inbound) Validate(id string, providers webhook.Registry) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(in.Providers)) {
		cfg := in.Providers[name]
		field := "providers." + name
		p, ok := providers.Lookup(name)
		if !ok {
			errs = append(errs, invalid(id, field, "unknown provider (known: %s)", strings.Join(slices.Sorted(maps.Keys(providers)), ", ")))
			continue
		}
		secretsErr := checkSecrets(id, field+".secrets", cfg.Secrets)
		if secretsErr != nil && !completeWithoutSecrets(p, cfg) {
			errs = append(errs, secretsErr)
		}
		for _, k := range slices.Sorted(maps.Keys(cfg.Settings)) {
			if k == "url" || strings.HasSuffix(k, "_url") {
				if err := checkURL(cfg.Settings[k]); err != nil {
					errs = append(errs, invalid(id, field+".settings."+k, "%v", err))
				}
			}
		}
		// A Checker checks the secrets too: asked only when they passed, it
		// does not say twice what is wrong with them.
		if c, ok := p.(webhook.Checker); ok && secretsErr == nil {
			if err := c.Check(cfg); err != nil {
				errs = append(errs, invalid(id, field+".settings", "%v", err))
			}
		}
	}
	return errors.Join(errs...)
}

// Validate checks the outbound configuration of tenant id: it sets
// targetUrl or destinations, not both. A targetUrl, when set, is an
// absolute http(s) URL and comes with at least one secret, no secret is
// empty, and timeout is a positive Go duration. With destinations, secrets
// and timeout belong to each destination, the list is not empty, and every
// destination has a unique name of a-z, 0-9 and '-' (at most MaxNameLength
// characters, not starting with '-'), a URL no other destination has (two
// destinations at one URL would post the same event twice under one
// webhook-id, which the receiver drops as a duplicate), at least one
// secret and no empty one, a positive timeout, a rate ParseRate accepts
// and a burst of 1 to MaxBurst with it, and a filter without problems
// (route.Filter.Check; which senders exist is ValidateWith's question).
// It returns nil, or errors.Join of one error wrapping ErrInvalid per
// field at fault, each naming the tenant and the field, never a secret or
// a URL.
func (o Outbound) Validate(id string) error {
	return o.validate(id, nil)
}

// ValidateWith is Validate, and also checks that every sender a filter
// names is one of providers (the build's provider.Registry) and, when in
// is not nil, a provider in enables: a filter naming another sender would
// never match.
func (o Outbound) ValidateWith(id string, providers webhook.Registry, in *Inbound) error {
	return o.validate(id, func(sender string) error {
		if _, ok := providers.Lookup(sender); !ok {
			return fmt.Errorf("unknown sender %q (known: %s)", sender, strings.Join(slices.Sorted(maps.Keys(providers)), ", "))
		}
		if in != nil {
			if _, ok := in.Provider(sender); !ok {
				return fmt.Errorf("sender %q is not enabled in the tenant's inbound configuration", sender)
			}
		}
		return nil
	})
}

func (o Outbound) validate(id string, known func(string) error) error {
	var errs []error
	if o.TargetURL != "" {
		if err := checkURL(o.TargetURL); err != nil {
			errs = append(errs, invalid(id, "outbound.targetUrl", "%v", err))
		}
		if len(o.Secrets) == 0 {
			errs = append(errs, invalid(id, "outbound.secrets", "a targetUrl needs at least one signing secret"))
		}
	}
	if err := checkSecrets(id, "outbound.secrets", o.Secrets); err != nil && len(o.Secrets) > 0 {
		errs = append(errs, err)
	}
	if err := checkTimeout(id, "outbound.timeout", o.Timeout); err != nil {
		errs = append(errs, err)
	}
	if o.Destinations == nil {
		return errors.Join(errs...)
	}
	switch {
	case o.TargetURL != "":
		errs = append(errs, invalid(id, "outbound.destinations", "set targetUrl or destinations, not both"))
	case len(o.Destinations) == 0:
		errs = append(errs, invalid(id, "outbound.destinations", "empty list: name at least one destination, or leave destinations out"))
	}
	if len(o.Secrets) > 0 {
		errs = append(errs, invalid(id, "outbound.secrets", "with destinations, each destination has its own secrets"))
	}
	if o.Timeout != "" {
		errs = append(errs, invalid(id, "outbound.timeout", "with destinations, each destination has its own timeout"))
	}
	names, urls := map[string]int{}, map[string]int{}
	for i, d := range o.Destinations {
		field := fmt.Sprintf("outbound.destinations[%d]", i)
		if err := CheckName(d.Name); err != nil {
			errs = append(errs, invalid(id, field+".name", "%v", err))
		} else if j, dup := names[d.Name]; dup {
			errs = append(errs, invalid(id, field+".name", "the name of destinations[%d] too", j))
		} else {
			names[d.Name] = i
		}
		if err := checkURL(d.URL); err != nil {
			errs = append(errs, invalid(id, field+".url", "%v", err))
		} else if j, dup := urls[d.URL]; dup {
			errs = append(errs, invalid(id, field+".url", "the URL of destinations[%d] too", j))
		} else {
			urls[d.URL] = i
		}
		if err := checkSecrets(id, field+".secrets", d.Secrets); err != nil {
			errs = append(errs, err)
		}
		if err := checkTimeout(id, field+".timeout", d.Timeout); err != nil {
			errs = append(errs, err)
		}
		if _, err := d.RetryHorizon(); err != nil {
			errs = append(errs, invalid(id, field+".horizon", "%v", err))
		}
		if d.Rate != "" {
			if _, err := parseRate(d.Rate); err != nil {
				errs = append(errs, invalid(id, field+".rate", "%v", err))
			}
		}
		switch {
		case d.Burst != 0 && d.Rate == "":
			errs = append(errs, invalid(id, field+".burst", "a burst needs a rate"))
		case d.Burst < 0 || d.Burst > MaxBurst:
			errs = append(errs, invalid(id, field+".burst", "not 1 to %d", MaxBurst))
		}
		for _, p := range d.Filter.Check(known) {
			errs = append(errs, invalid(id, field+".filter."+p.Field, "%s", p.Reason))
		}
	}
	return errors.Join(errs...)
}

func checkTimeout(id, field, s string) error {
	if s == "" {
		return nil
	}
	if d, err := time.ParseDuration(s); err != nil || d <= 0 {
		return invalid(id, field, "not a positive duration such as \"10s\"")
	}
	return nil
}

// CheckName accepts a destination name: 1 to MaxNameLength characters of
// a-z, 0-9 and '-', not starting with '-' (safe in an effect name, a log
// line and a ledger key).
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("missing: every destination needs a name")
	case len(name) > MaxNameLength:
		return fmt.Errorf("longer than %d characters", MaxNameLength)
	case name[0] == '-' || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "":
		return errors.New("not a-z, 0-9 and '-' (not first)")
	}
	return nil
}

// completeWithoutSecrets reports whether p is a webhook.Checker that accepts
// cfg, which has no secrets: an entry whose key is a setting (Discord's and
// SendGrid's public_key) or that waits for the sender's handshake to bring
// the secret (Asana's and Notion's onboarding).
func completeWithoutSecrets(p webhook.Provider, cfg webhook.Config) bool {
	c, ok := p.(webhook.Checker)
	return ok && len(cfg.Secrets) == 0 && c.Check(cfg) == nil
}

func checkSecrets(id, field string, secrets []string) error {
	if len(secrets) == 0 {
		return invalid(id, field, "at least one secret is required")
	}
	var errs []error
	for i, s := range secrets {
		if strings.TrimSpace(s) == "" {
			errs = append(errs, invalid(id, fmt.Sprintf("%s[%d]", field, i), "empty secret"))
		}
	}
	return errors.Join(errs...)
}

// checkURL accepts an absolute http or https URL with a host and without
// user information. Its error never repeats the URL, which may
// carry a token in its query.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return errors.New("empty URL")
	case err != nil:
		return errors.New("not a URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return errors.New("not an absolute http(s) URL")
	case u.Host == "":
		return errors.New("URL has no host")
	case u.User != nil:
		return errors.New("URL must not carry user information")
	}
	return nil
}

func invalid(id, field, format string, args ...any) error {
	return fmt.Errorf("%w: tenant %q: %s: %s", ErrInvalid, id, field, fmt.Sprintf(format, args...))
}
