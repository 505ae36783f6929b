// Command invoke is a Docker-free `sam local invoke`: it runs a function's
// real bootstrap binary under a local Lambda Runtime API (package
// pkg/local/runtimeapi) with one event file and the function's environment from an
// env-vars file in SAM's format ({"Parameters": {…}, "<LogicalId>": {…}}).
//
//	make invoke FUNCTION=IngestFunction EVENT=events/ingest/github-issues-opened.json
//
// -endpoint and -dynamodb-endpoint replace the file's AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_DYNAMODB (and the queue URL template's host), so it
// reaches a `make run` on other ports. Like `sam local invoke`, which hands
// the container the caller's credentials and region, it gives the bootstrap
// the emulators' fake credentials and region (the file holds only variables
// template.yaml declares: SAM passes no others). It prints the response on stdout,
// the function's logs on stderr, and a REPORT line with the measured init
// and invoke durations.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/runtimeapi"
)

func main() {
	function := flag.String("function", "", "logical id of the function (e.g. IngestFunction)")
	event := flag.String("event", "", "event file")
	envFile := flag.String("env-vars", "events/env.json", "environment file in SAM's --env-vars format")
	binary := flag.String("binary", "", "bootstrap built for this machine")
	timeout := flag.Duration("timeout", 30*time.Second, "function timeout")
	endpoint := flag.String("endpoint", "", "moto endpoint replacing the file's AWS_ENDPOINT_URL")
	ddbEndpoint := flag.String("dynamodb-endpoint", "", "DynamoDB endpoint replacing the file's AWS_ENDPOINT_URL_DYNAMODB")
	flag.Parse()
	if *function == "" || *event == "" || *binary == "" {
		fmt.Fprintln(os.Stderr, "usage: invoke -function IngestFunction -event events/… -binary bin/local/ingest/bootstrap [-env-vars events/env.json]")
		os.Exit(2)
	}
	if err := run(*function, *event, *envFile, *binary, *timeout, *endpoint, *ddbEndpoint); err != nil {
		fmt.Fprintln(os.Stderr, "invoke:", err)
		os.Exit(1)
	}
}

func run(function, eventFile, envFile, binary string, timeout time.Duration, endpoint, ddbEndpoint string) error {
	ev, err := os.ReadFile(eventFile)
	if err != nil {
		return err
	}
	env, err := loadEnv(envFile, function, endpoint, ddbEndpoint)
	if err != nil {
		return err
	}
	res, err := runtimeapi.Invoke(context.Background(), runtimeapi.Options{
		Binary: binary, Env: env, Event: ev, Timeout: timeout, Stdout: os.Stderr, Stderr: os.Stderr,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "REPORT Init Duration: %.2f ms Duration: %.2f ms\n",
		float64(res.Init.Microseconds())/1000, float64(res.Duration.Microseconds())/1000)
	if res.Error != nil {
		return res.Error
	}
	fmt.Println(string(res.Payload))
	return nil
}

// loadEnv merges the file's "Parameters" (every function) with the
// function's own section, as SAM does, then applies the endpoint overrides
// (empty ones are ignored).
func loadEnv(path, function, endpoint, ddbEndpoint string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file map[string]map[string]string
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	own, ok := file[function]
	if !ok {
		return nil, fmt.Errorf("%s has no section for %s", path, function)
	}
	// The session SAM would give the container, here the emulators'.
	merged := map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": emulator.Region}
	for k, v := range file["Parameters"] {
		merged[k] = v
	}
	for k, v := range own {
		merged[k] = v
	}
	if endpoint != "" {
		if old := merged["AWS_ENDPOINT_URL"]; old != "" {
			if rest, ok := strings.CutPrefix(merged["QUEUE_URL_TEMPLATE"], old); ok {
				merged["QUEUE_URL_TEMPLATE"] = endpoint + rest
			}
		}
		merged["AWS_ENDPOINT_URL"] = endpoint
	}
	if ddbEndpoint != "" {
		merged["AWS_ENDPOINT_URL_DYNAMODB"] = ddbEndpoint
	}
	env := make([]string, 0, len(merged))
	for _, k := range slices.Sorted(maps.Keys(merged)) {
		env = append(env, k+"="+merged[k])
	}
	return env, nil
}
