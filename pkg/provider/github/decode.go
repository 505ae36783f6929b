package github

import (
	"encoding/json"

	"github.com/hookpack/hookpack/pkg/webhook"
)

func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return webhook.Errorf(webhook.ErrMalformed, "body is not a JSON object: %v", err)
	}
	return nil
}
