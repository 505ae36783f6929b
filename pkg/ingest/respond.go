package ingest

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// rank orders event outcomes by which one decides a delivery's answer: a
// reused id outranks a held-back one (never the answer: the event that
// held it back is in the same delivery and failed, so the answer is 503),
// which outranks an accepted one.
var rank = map[outcome]int{outDuplicate: 0, outAccepted: 1, outHeldBack: 2, outReused: 3}

// respond turns a result into the HTTP response.
func (h *Handler) respond(res *result) (events.APIGatewayV2HTTPResponse, outcome) {
	if res.err != nil {
		status, out, msg := classify(res.err)
		resp := jsonResponse(status, map[string]string{"error": msg})
		switch status {
		case http.StatusServiceUnavailable:
			resp.Headers["retry-after"] = "5"
		case http.StatusMethodNotAllowed:
			resp.Headers["allow"] = "GET, POST"
		}
		return resp, out
	}
	if res.reply != nil {
		return replyResponse(res.reply), outHandshake
	}
	out := outDuplicate
	for _, e := range res.events {
		if rank[e.Outcome] > rank[out] {
			out = e.Outcome
		}
	}
	if res.answer != nil && (out == outAccepted || out == outDuplicate) {
		// The sender reads the body; the header tells everyone else (make
		// send, tests, a proxy's logs) what became of the events.
		resp := replyResponse(res.answer)
		resp.Headers["x-hookpack-status"] = string(out)
		ids := make([]string, len(res.events))
		for i, e := range res.events {
			ids[i] = e.ID
		}
		resp.Headers["x-hookpack-event-ids"] = strings.Join(ids, ",")
		return resp, out
	}
	if out == outReused {
		return jsonResponse(http.StatusConflict, map[string]any{
			"error":  idempotency.ErrPayloadMismatch.Error() + ": this event id was already received with another body",
			"events": res.events,
		}), out
	}
	return jsonResponse(http.StatusOK, map[string]any{"status": out, "events": res.events}), out
}

// replyResponse is a provider's own answer: its status (200 when unset), its
// content type (plain text when unset) and its headers.
func replyResponse(r *webhook.Reply) events.APIGatewayV2HTTPResponse {
	ct := r.ContentType
	if ct == "" {
		ct = "text/plain; charset=utf-8"
	}
	status := r.Status
	if status == 0 {
		status = http.StatusOK
	}
	h := make(map[string]string, len(r.Headers)+1)
	for k, v := range r.Headers {
		h[strings.ToLower(k)] = v
	}
	h["content-type"] = ct
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: h, Body: r.Body}
}

func jsonResponse(status int, v any) events.APIGatewayV2HTTPResponse {
	b, _ := json.Marshal(v) // maps of strings and eventResults always encode
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"content-type": "application/json"},
		Body:       string(b),
	}
}
