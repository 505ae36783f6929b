// Command bench-e2e is `make bench-e2e`: it measures the whole local
// pipeline end to end (package bench) for each scenario of bench.Scenarios,
// each on a fresh local stack, and prints the table with the machine it ran
// on. -scale scales every scenario's webhook count, -senders the deliveries
// in flight at once.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/local/bench"
	"github.com/hookpack/hookpack/pkg/local/devstack"
)

func main() {
	scale := flag.Float64("scale", 1, "multiply each scenario's webhook count")
	senders := flag.Int("senders", 32, "deliveries in flight at once")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	var results []bench.Result
	for _, sc := range bench.Scenarios {
		sc.Webhooks = max(1, int(float64(sc.Webhooks)**scale))
		sc.Senders = *senders
		fmt.Fprintf(os.Stderr, "bench-e2e: %s, %d webhooks…\n", sc.Name(), sc.Webhooks)
		r, err := bench.Run(ctx, sc, bench.Options{DynamoDBLocalDir: devstack.EnvOptions().DynamoDBLocalDir})
		if err != nil {
			fmt.Fprintln(os.Stderr, "make bench-e2e:", err)
			os.Exit(1)
		}
		results = append(results, r)
	}
	fmt.Printf("Machine: %d cores, %s, %s %s/%s; emulators: DynamoDB Local (ledger, claims), moto (SQS, SSM).\n\n",
		runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	bench.Table(os.Stdout, results)
}

// cpuModel reads the CPU model name (Linux), or "unknown CPU".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return "`" + strings.TrimSpace(v) + "`"
		}
	}
	return "unknown CPU"
}
