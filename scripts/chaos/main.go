// Command chaos is `make chaos`: a seeded fault-injection run of the whole
// local pipeline (see package chaos). SEED replays a run; CHAOS_LOG=<file>
// keeps the functions' log lines; -unpaced breaks the pack on purpose (a
// destination's rate left out) to show the report catch it. It exits 1 when
// the pack lost, doubled or reordered an event, dead-lettered a deliverable
// one, broke a destination's filter, rate or 429 bound, delivered to a
// paused destination, or let the unwell destinations slow the healthy one.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/hookpack/hookpack/pkg/local/chaos"
	"github.com/hookpack/hookpack/pkg/local/devstack"
)

func main() {
	seed := uint64(time.Now().UnixNano() % 1_000_000)
	if s := os.Getenv("SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "make chaos: SEED=%q is not a number\n", s)
			os.Exit(2)
		}
		seed = n
	}
	deliveries := flag.Int("deliveries", devstack.GetenvInt("DELIVERIES", 10000), "deliveries to send (env DELIVERIES)")
	conversations := flag.Int("conversations", devstack.GetenvInt("CONVERSATIONS", 120), "conversations, spread over the tenants (env CONVERSATIONS)")
	unpaced := flag.Bool("unpaced", false, "break the pack on purpose: zeta's rated destination without its rate (its target still enforces it), to see the report fail")
	flag.Parse()

	logger := slog.New(slog.DiscardHandler)
	if path := os.Getenv("CHAOS_LOG"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "make chaos: %v\n", err)
			os.Exit(2)
		}
		defer f.Close()
		logger = slog.New(slog.NewJSONHandler(f, nil))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintf(os.Stderr, "make chaos: seed %d, %d deliveries over %d conversations\n", seed, *deliveries, *conversations)
	r, err := chaos.Run(ctx, chaos.Options{
		Seed: seed, Deliveries: *deliveries, Conversations: *conversations,
		DynamoDBLocalDir: devstack.EnvOptions().DynamoDBLocalDir,
		TemplateFile:     "template.yaml",
		Progress:         os.Stderr,
		Logger:           logger,
		Unpaced:          *unpaced,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "make chaos (seed %d): %v\n", seed, err)
		os.Exit(2)
	}
	r.Write(os.Stdout)
	if r.Failed() {
		os.Exit(1)
	}
}
