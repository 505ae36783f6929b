package webhook

import "strings"

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
