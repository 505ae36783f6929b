package webhook

import (
	"net/url"
	"strings"
)

// RebaseURL returns raw (a Request.URL) with its scheme and host replaced by
// those of base and base's path, if any, put in front of raw's path. raw's
// path and query are kept byte for byte, because schemes that sign the URL
// (Twilio, Square) sign exactly what the sender called. An empty base returns
// raw unchanged.
//
// base is a tenant setting ("base_url"): the public origin of a custom domain
// plus any path prefix its mapping adds, e.g. "https://hooks.example.com" or
// "https://example.com/api". It returns an error wrapping ErrMisconfigured
// when base is not an absolute http(s) URL without query or fragment, and
// ErrMalformed when raw has no scheme and host.
func RebaseURL(raw, base string) (string, error) {
	if base == "" {
		return raw, nil
	}
	b, err := url.Parse(base)
	if err != nil || (b.Scheme != "https" && b.Scheme != "http") || b.Host == "" || b.RawQuery != "" || b.Fragment != "" || b.User != nil {
		return "", errorf(ErrMisconfigured, "base_url %q is not an absolute http(s) URL without query", Truncate(base, 64))
	}
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "", errorf(ErrMalformed, "request URL has no scheme")
	}
	i := strings.IndexAny(rest, "/?")
	if i < 0 {
		rest = "/"
	} else {
		rest = rest[i:]
		if rest[0] == '?' {
			rest = "/" + rest
		}
	}
	prefix := strings.TrimRight(b.EscapedPath(), "/")
	return b.Scheme + "://" + b.Host + prefix + rest, nil
}
