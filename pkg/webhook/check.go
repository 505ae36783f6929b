package webhook

import (
	"slices"
	"strings"
)

// CheckSettings is the part of a Checker every provider shares: it returns
// an error wrapping ErrMisconfigured, naming the provider and the fields,
// when c has no secret or an empty one, lacks one of the required settings,
// sets one that is neither required nor optional (a misspelt key would
// otherwise be ignored silently), or sets a "tolerance" that is not a
// positive duration below MaxTolerance. Errors name fields, never their values.
func (c Config) CheckSettings(name string, required, optional []string) error {
	if err := c.CheckSecrets(name); err != nil {
		return err
	}
	for i, s := range c.Secrets {
		if s == "" {
			return errorf(ErrMisconfigured, "%s: secret %d is empty", name, i+1)
		}
	}
	var missing, unknown []string
	for _, k := range required {
		if c.Settings[k] == "" {
			missing = append(missing, k)
		}
	}
	for k := range c.Settings {
		if !slices.Contains(required, k) && !slices.Contains(optional, k) {
			unknown = append(unknown, k)
		}
	}
	switch {
	case len(missing) > 0:
		return errorf(ErrMisconfigured, "%s: missing settings %s", name, strings.Join(missing, ", "))
	case len(unknown) > 0:
		slices.Sort(unknown)
		known := append(slices.Clone(required), optional...)
		if len(known) == 0 {
			return errorf(ErrMisconfigured, "%s: unknown settings %s (it takes none)", name, strings.Join(unknown, ", "))
		}
		return errorf(ErrMisconfigured, "%s: unknown settings %s (known: %s)", name, strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	if v, ok := c.Settings["tolerance"]; ok {
		if _, err := ParseTolerance(v, 0); err != nil {
			return errorf(ErrMisconfigured, "%s: setting tolerance is not a positive duration below the dedup retention (%s)", name, MaxTolerance)
		}
	}
	return nil
}
