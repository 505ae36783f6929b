package rehearsal

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"

	"github.com/hookpack/hookpack/pkg/local/emulator"
)

// iamPy evaluates calls with moto's own IAM policy evaluator; see Evaluate.
//
//go:embed iam.py
var iamPy string

// IAMRequest is what Evaluate checks.
type IAMRequest struct {
	Functions        []FunctionCalls  `json:"functions"`
	ResourcePolicies []ResourcePolicy `json:"resourcePolicies"`
}

// FunctionCalls are one function's calls, its role's policies as the stack
// created them, and the template's declared statements (to name the one a
// denied call lacks).
type FunctionCalls struct {
	Name     string   `json:"name"`
	Policies []Policy `json:"policies"`
	Declared []Policy `json:"declared"`
	Calls    []Probe  `json:"calls"`
	// Forbidden are calls the role must not allow (a Deny statement or a
	// resource scope guards them).
	Forbidden []Probe `json:"forbidden"`
}

// Probe is an (action, resource) pair to evaluate.
type Probe struct {
	Action   string            `json:"action"`
	Resource string            `json:"resource"`
	Context  map[string]string `json:"context,omitempty"`
	// Count is how many requests made it; Operations names their API
	// operations.
	Count      int    `json:"count,omitempty"`
	Operations string `json:"operations,omitempty"`
	// Why says why a forbidden call must stay denied, or what a
	// resource-policy check shows.
	Why    string `json:"why,omitempty"`
	Expect string `json:"expect,omitempty"`
}

// ResourcePolicy is a resource-based policy and the checks made on it.
type ResourcePolicy struct {
	Name     string         `json:"name"`
	Document map[string]any `json:"document"`
	Checks   []Probe        `json:"checks"`
}

// Verdict is the evaluator's answer for one probe: PERMITTED, DENIED
// (explicitly) or NEUTRAL (no statement allows it: implicitly denied).
type Verdict struct {
	Probe
	Decision   string   `json:"decision"`
	AllowedBy  []string `json:"allowedBy"`
	DeniedBy   []string `json:"deniedBy"`
	DeclaredBy []string `json:"declaredBy"`
}

// Grant is one (action, resource) pair of a statement and how many
// recorded calls (or, for a Deny, forbidden probes) it matched.
type Grant struct {
	Policy   string `json:"policy"`
	Sid      string `json:"sid"`
	Effect   string `json:"effect"`
	Action   string `json:"action"`
	Resource string `json:"resource"`
	Used     int    `json:"used"`
}

// FunctionVerdict is one function's evaluation.
type FunctionVerdict struct {
	Name      string    `json:"name"`
	Calls     []Verdict `json:"calls"`
	Forbidden []Verdict `json:"forbidden"`
	Grants    []Grant   `json:"grants"`
	// WithoutEach says, for every statement of the role, what the same
	// calls would meet without it.
	WithoutEach []struct {
		Policy string   `json:"policy"`
		Sid    string   `json:"sid"`
		Breaks []string `json:"breaks"`
	} `json:"withoutEach"`
}

// IAMVerdict is Evaluate's answer.
type IAMVerdict struct {
	Functions        []FunctionVerdict `json:"functions"`
	ResourcePolicies []struct {
		Name   string    `json:"name"`
		Checks []Verdict `json:"checks"`
	} `json:"resourcePolicies"`
}

// Evaluate runs iam.py on moto's Python interpreter.
func Evaluate(ctx context.Context, req IAMRequest) (IAMVerdict, error) {
	py, err := emulator.Python()
	if err != nil {
		return IAMVerdict{}, err
	}
	in, err := json.Marshal(req)
	if err != nil {
		return IAMVerdict{}, err
	}
	cmd := exec.CommandContext(ctx, py, "-c", iamPy)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return IAMVerdict{}, fmt.Errorf("iam.py: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var v IAMVerdict
	if err := json.Unmarshal(out, &v); err != nil {
		return IAMVerdict{}, fmt.Errorf("iam.py output: %w", err)
	}
	return v, nil
}
