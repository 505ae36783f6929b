package ingest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// pathParams reads {tenant} and {provider} from the route's path parameters,
// falling back to the raw path (for events without them).
func pathParams(req *events.APIGatewayV2HTTPRequest) (string, string) {
	t, p := req.PathParameters["tenant"], req.PathParameters["provider"]
	if t != "" && p != "" {
		return t, p
	}
	parts := strings.Split(strings.Trim(req.RawPath, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "webhooks" {
			return parts[i+1], parts[i+2]
		}
	}
	return t, p
}

// rawBody returns the body bytes exactly as sent.
func rawBody(req *events.APIGatewayV2HTTPRequest, max int) ([]byte, error) {
	n := len(req.Body)
	if req.IsBase64Encoded {
		n = base64.StdEncoding.DecodedLen(len(req.Body))
	}
	if n > max+3 { // DecodedLen rounds up to a multiple of 3
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", errBodyTooLarge, n, max)
	}
	if !req.IsBase64Encoded {
		return []byte(req.Body), nil
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, errBadEncoding
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", errBodyTooLarge, len(b), max)
	}
	return b, nil
}

// webhookRequest builds the provider-facing request: canonical headers,
// parsed query and the public URL as the sender called it.
func webhookRequest(req *events.APIGatewayV2HTTPRequest, tenantID, providerName string, body []byte) (*webhook.Request, error) {
	hdr := make(http.Header, len(req.Headers))
	for k, v := range req.Headers {
		hdr[http.CanonicalHeaderKey(k)] = []string{v}
	}
	q, err := url.ParseQuery(req.RawQueryString)
	if err != nil {
		return nil, fmt.Errorf("%w: query string: %v", webhook.ErrMalformed, err)
	}
	scheme := hdr.Get("X-Forwarded-Proto")
	if scheme == "" {
		scheme = "https"
	}
	host := hdr.Get("Host")
	if host == "" {
		host = req.RequestContext.DomainName
	}
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	u := scheme + "://" + host + path
	if req.RawQueryString != "" {
		u += "?" + req.RawQueryString
	}
	return &webhook.Request{
		Method:   req.RequestContext.HTTP.Method,
		Tenant:   tenantID,
		Provider: providerName,
		Header:   hdr,
		Query:    q,
		Body:     body,
		URL:      u,
	}, nil
}
