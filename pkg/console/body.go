package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/inspect"
)

// header is one delivery header a body page shows.
type header struct{ Name, Value string }

type bodyPage struct {
	page
	Tenant, Message, Key string
	Headers              []header
	// Withheld names the headers not shown (credentials).
	Withheld []string
	Body     string
	Encoding string
	Size     int
}

// withheld reports whether a header may carry a credential or a signature:
// never shown, whatever the provider kept.
func withheld(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"signature", "authorization", "secret", "token", "cookie", "hmac", "-sig"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// body shows one dead letter's body and the delivery headers the ingest
// kept, which the other pages never do: the operator asks for it by
// following a link.
func (s *Server) body(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := bodyPage{page: s.page("Body of a dead letter"), Tenant: strings.TrimSpace(q.Get("tenant")), Message: strings.TrimSpace(q.Get("message"))}
	if err := inspect.CheckTenant(p.Tenant); err != nil {
		s.fail(w, r, status(err), err)
		return
	}
	if p.Message == "" {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("%w: no dead letter named (message=<its DLQ message id>)", ErrBadRequest))
		return
	}
	_, dlq, err := s.queues(p.Tenant)
	if err != nil {
		s.fail(w, r, status(err), err)
		return
	}
	s.dlq.Lock()
	env, err := s.cfg.DeadLetters.Envelope(r.Context(), dlq, p.Message)
	s.dlq.Unlock()
	if err != nil {
		err = unknownQueue(err, p.Tenant, dlq)
		s.fail(w, r, status(err), err)
		return
	}
	p.Key, p.Encoding = env.Key, env.BodyEncoding
	for _, name := range slices.Sorted(maps.Keys(env.Headers)) {
		if withheld(name) {
			p.Withheld = append(p.Withheld, name)
			continue
		}
		p.Headers = append(p.Headers, header{name, env.Headers[name]})
	}
	raw, err := env.RawBody()
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, fmt.Errorf("dead letter %s: %w", p.Message, err))
		return
	}
	p.Size = len(raw)
	switch env.BodyEncoding {
	case envelope.EncodingJSON:
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") == nil {
			p.Body = b.String()
		} else {
			p.Body = string(raw)
		}
	case envelope.EncodingBase64:
		p.Body = env.Body // binary: its base64, as the envelope holds it
	default:
		p.Body = string(raw)
	}
	s.render(w, http.StatusOK, "body", p)
}
