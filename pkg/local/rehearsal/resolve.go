package rehearsal

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hookpack/hookpack/pkg/local/capture"
)

// Region and Account are moto's.
const (
	Region  = capture.Region
	Account = capture.Account
)

// resolver resolves the intrinsics a rendered template's role policies and
// OpenAPI body use (Ref, Fn::GetAtt …Arn, Fn::Sub) against what a stack
// created, so that the template's declared statements can be set beside
// the ones the stack created, and the API body imported.
type resolver struct {
	stack  Stack
	params map[string]any
}

func newResolver(t Template, s Stack) resolver {
	r := resolver{stack: s, params: map[string]any{}}
	ps, _ := t["Parameters"].(map[string]any)
	for k, v := range ps {
		p, _ := v.(map[string]any)
		r.params[k] = p["Default"]
	}
	return r
}

var subVar = regexp.MustCompile(`\$\{([^}!]+)\}`)

func (r resolver) resolve(v any) (any, error) {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = r.resolve(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				switch k {
				case "Ref":
					return r.name(fmt.Sprint(arg))
				case "Fn::GetAtt":
					parts, _ := arg.([]any)
					if s, ok := arg.(string); ok {
						a, b, _ := strings.Cut(s, ".")
						parts = []any{a, b}
					}
					if len(parts) != 2 {
						return nil, fmt.Errorf("Fn::GetAtt %v", arg)
					}
					return r.name(fmt.Sprint(parts[0]) + "." + fmt.Sprint(parts[1]))
				case "Fn::Sub":
					return r.sub(arg)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			var err error
			if out[k], err = r.resolve(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}

func (r resolver) sub(arg any) (any, error) {
	tmpl, ok := arg.(string)
	vars := map[string]any{}
	if !ok {
		list, _ := arg.([]any)
		if len(list) != 2 {
			return nil, fmt.Errorf("Fn::Sub %v", arg)
		}
		tmpl, _ = list[0].(string)
		m, _ := list[1].(map[string]any)
		for k, v := range m {
			rv, err := r.resolve(v)
			if err != nil {
				return nil, err
			}
			vars[k] = rv
		}
	}
	var err error
	out := subVar.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[2 : len(m)-1]
		if v, ok := vars[name]; ok {
			return fmt.Sprint(v)
		}
		s, e := r.name(name)
		if e != nil && err == nil {
			err = e
		}
		return s
	})
	return out, err
}

// name resolves a pseudo parameter, parameter, resource (its physical id)
// or "<resource>.Arn".
func (r resolver) name(n string) (string, error) {
	switch n {
	case "AWS::Partition":
		return "aws", nil
	case "AWS::Region":
		return Region, nil
	case "AWS::AccountId":
		return Account, nil
	case "AWS::StackName":
		return r.stack.Name, nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	}
	if v, ok := r.params[n]; ok {
		return fmt.Sprint(v), nil
	}
	id, attr, _ := strings.Cut(n, ".")
	res, ok := r.stack.Resources[id]
	if !ok {
		return "", fmt.Errorf("%s: no such resource in stack %s", n, r.stack.Name)
	}
	if attr == "" {
		return res.Physical, nil
	}
	if attr != "Arn" {
		return "", fmt.Errorf("%s: only .Arn is resolved", n)
	}
	return arnOf(res)
}

// arnOf is the ARN of a created resource, from its physical id.
func arnOf(r Resource) (string, error) {
	switch r.Type {
	case "AWS::DynamoDB::Table":
		return "arn:aws:dynamodb:" + Region + ":" + Account + ":table/" + r.Physical, nil
	case "AWS::S3::Bucket":
		return "arn:aws:s3:::" + r.Physical, nil
	case "AWS::Lambda::Function":
		if strings.HasPrefix(r.Physical, "arn:") {
			return r.Physical, nil
		}
		return "arn:aws:lambda:" + Region + ":" + Account + ":function:" + r.Physical, nil
	case "AWS::SQS::Queue":
		return capture.QueueARN(r.Physical), nil
	case "AWS::KMS::Key":
		return "arn:aws:kms:" + Region + ":" + Account + ":key/" + r.Physical, nil
	case "AWS::Logs::LogGroup":
		return "arn:aws:logs:" + Region + ":" + Account + ":log-group:" + r.Physical + ":*", nil
	case "AWS::SNS::Topic", "AWS::IAM::Role":
		if strings.HasPrefix(r.Physical, "arn:") {
			return r.Physical, nil
		}
	}
	return "", fmt.Errorf("no ARN known for %s %s", r.Type, r.Physical)
}
