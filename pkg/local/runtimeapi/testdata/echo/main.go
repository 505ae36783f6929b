// Command echo is a test function for package runtimeapi: it echoes its event
// with the value of $GREETING, and fails when the event asks it to.
package main

import (
	"context"
	"errors"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

type event struct {
	Name string `json:"name"`
	Fail bool   `json:"fail"`
}

func main() {
	lambda.Start(func(ctx context.Context, e event) (map[string]any, error) {
		if e.Fail {
			return nil, errors.New("asked to fail")
		}
		_, hasDeadline := ctx.Deadline()
		return map[string]any{"hello": e.Name, "greeting": os.Getenv("GREETING"), "deadline": hasDeadline}, nil
	})
}
