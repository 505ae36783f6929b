package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/idempotency"
	"github.com/hookpack/hookpack/pkg/provider/catalog"
	"github.com/hookpack/hookpack/pkg/provider/discord"
	"github.com/hookpack/hookpack/pkg/provider/hubspot"
	"github.com/hookpack/hookpack/pkg/provider/mailgun"
	"github.com/hookpack/hookpack/pkg/provider/sendgrid"
	"github.com/hookpack/hookpack/pkg/provider/slack"
	"github.com/hookpack/hookpack/pkg/provider/standardwebhooks"
	"github.com/hookpack/hookpack/pkg/provider/stripe"
	"github.com/hookpack/hookpack/pkg/provider/twitch"
	"github.com/hookpack/hookpack/pkg/provider/zoom"
	"github.com/hookpack/hookpack/pkg/webhook"
)

// retries are the senders' retry rules by page: each provider's Retries,
// the one place its window is set, and each catalog row's (init).
var retries = map[string]*webhook.Retries{
	"discord":          &discord.Retries,
	"hubspot":          &hubspot.Retries,
	"mailgun":          &mailgun.Retries,
	"sendgrid":         &sendgrid.Retries,
	"slack":            &slack.Retries,
	"standardwebhooks": &standardwebhooks.Retries,
	"stripe":           &stripe.Retries,
	"twitch":           &twitch.Retries,
	"zoom":             &zoom.Retries,
}

func init() {
	for i := range catalog.Rows {
		if r := catalog.Rows[i].Retries; r != nil {
			retries[catalog.Rows[i].Name] = r
		}
	}
}

// TestRetries holds each sender's window to the idempotency table's
// retention (a retry accepted after its first delivery's claim expired
// would run twice) and to its page: docs/providers/<name>.md carries the
// line RetriesLine writes from the code, word for word.
func TestRetries(t *testing.T) {
	if webhook.UndocumentedHorizon+webhook.Skew >= idempotency.DefaultRetention {
		t.Errorf("webhook.UndocumentedHorizon %s plus skew reaches the dedup retention %s", webhook.UndocumentedHorizon, idempotency.DefaultRetention)
	}
	if webhook.MaxTolerance > idempotency.DefaultRetention {
		t.Errorf("webhook.MaxTolerance %s lets a tenant's tolerance outlast the dedup retention %s", webhook.MaxTolerance, idempotency.DefaultRetention)
	}
	for name, r := range retries {
		t.Run(name, func(t *testing.T) {
			if r.Window.Past >= idempotency.DefaultRetention {
				t.Errorf("window %s back reaches the dedup retention %s", r.Window.Past, idempotency.DefaultRetention)
			}
			if r.Window.Past < r.Covers() {
				t.Errorf("window %s back is shorter than the retry horizon %s of a sender that may not sign its retries again", r.Window.Past, r.Covers())
			}
			if r.Horizon > webhook.UndocumentedHorizon {
				t.Errorf("documented horizon %s outlasts webhook.UndocumentedHorizon %s, the horizon assumed where none is documented", r.Horizon, webhook.UndocumentedHorizon)
			}
			page, err := os.ReadFile(filepath.Join("..", "..", "docs", "providers", name+".md"))
			if err != nil {
				t.Fatal(err)
			}
			if want := retriesLine(r); !strings.Contains(string(page), want) {
				t.Errorf("docs/providers/%s.md lacks the line\n%s", name, want)
			}
		})
	}
}

// retriesLine is a sender's "Retries:" line: whether a retry is signed
// again, the source, the window and the horizon.
func retriesLine(r *webhook.Retries) string {
	var signing string
	switch r.Signing {
	case webhook.Resigned:
		signing = "re-signed on each attempt"
	case webhook.ByRule:
		signing = "re-signed on each attempt, as the sender's own rule requires"
	case webhook.Once:
		signing = "none, each request is sent once"
	default:
		signing = "not documented as re-signed"
	}
	ahead := "any time ahead"
	if r.Window.Future != webhook.AnyFuture {
		ahead = span(r.Window.Future) + " ahead"
	}
	var horizon string
	switch {
	case r.Horizon > 0:
		horizon = span(r.Horizon)
	case r.Signing == webhook.Once:
		horizon = "none"
	case r.Covers() > 0:
		horizon = "not documented, " + span(r.Covers()) + " assumed"
	default:
		horizon = "not documented"
	}
	return fmt.Sprintf("Retries: %s (%s): accepted for %s back, %s (retry horizon: %s).", signing, r.Source, span(r.Window.Past), ahead, horizon)
}

// span writes d in hours, minutes and seconds, leaving out zero parts.
func span(d time.Duration) string {
	var parts []string
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "min"}, {time.Second, "s"}} {
		if n := d / u.d; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, u.name))
			d -= n * u.d
		}
	}
	return strings.Join(parts, " ")
}
