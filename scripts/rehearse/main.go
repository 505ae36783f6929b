// Command rehearse rehearses a deploy on moto (package
// pkg/local/rehearsal): `make rehearse`. It prints the report and exits 1
// when the rehearsal failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hookpack/hookpack/pkg/local/rehearsal"
)

func main() {
	verbose := flag.Bool("v", false, "print the functions' logs")
	flag.Parse()
	start := time.Now()
	o := rehearsal.Options{Root: ".", Logf: func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "rehearse %5.1fs: "+f+"\n", append([]any{time.Since(start).Seconds()}, a...)...)
	}}
	if *verbose {
		o.Logs = os.Stderr
	}
	rep, err := rehearsal.Run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rehearse:", err)
		os.Exit(1)
	}
	rep.Write(os.Stdout)
	if rep.Err() != nil {
		os.Exit(1)
	}
}
