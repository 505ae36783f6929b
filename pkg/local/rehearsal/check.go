package rehearsal

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/hookpack/hookpack/pkg/local/capture"
)

// checkIAM evaluates every recorded call against its function's role as
// the stack created it, the calls each role must not be allowed, and the
// resource-based policies that concern the calls.
func checkIAM(ctx context.Context, client *ssm.Client, rep *Report, calls []capture.Call, declared Template, o Options) error {
	ingestFn, workerFn, err := roles(rep)
	if err != nil {
		return err
	}
	res := newResolver(declared, rep.Core)
	dlqARN := capture.QueueARN(rep.TenantStack.Resources["DeadLetterQueue"].Physical)
	qARN := capture.QueueARN(rep.TenantStack.Resources["Queue"].Physical)
	param := func(kind string) string {
		return capture.ParameterARN("/" + o.StackName + "/tenants/" + o.Tenant + "/" + kind)
	}
	forbidden := map[string][]Probe{
		ingestFn.LogicalID: {
			{Action: "sqs:SendMessage", Resource: dlqARN, Why: "ingest never writes a dead-letter queue; only the worker dead-letters, with the reason"},
			{Action: "ssm:GetParameter", Resource: param("outbound"), Why: "ingest never reads outbound credentials"},
		},
		workerFn.LogicalID: {
			{Action: "ssm:GetParameter", Resource: param("inbound"), Why: "the worker never reads inbound credentials"},
			{Action: "sqs:SendMessage", Resource: qARN, Why: "the worker never enqueues to a tenant queue; it only dead-letters"},
		},
	}
	forbidden[watchFunction] = []Probe{
		{Action: "sqs:ReceiveMessage", Resource: qARN, Why: "the watch only reads queue attributes; a receive would hide a message from the worker"},
		{Action: "sqs:ReceiveMessage", Resource: dlqARN, Why: "the watch only reads queue attributes; a receive would hide a dead letter from a replay"},
		{Action: "ssm:GetParameter", Resource: param("inbound"), Why: "the watch never reads credentials"},
	}
	var req IAMRequest
	var s3calls []Probe
	for _, f := range rep.Functions {
		fc := FunctionCalls{Name: f.LogicalID, Policies: f.Policies, Forbidden: forbidden[f.LogicalID]}
		if fc.Declared, err = declaredPolicies(declared, f.LogicalID, res); err != nil {
			return err
		}
		fc.Calls = append(group(calls, f.LogicalID), topicKeyCalls(rep, calls, f.LogicalID)...)
		for _, c := range fc.Calls {
			if strings.HasPrefix(c.Action, "s3:") {
				s3calls = append(s3calls, c)
			}
		}
		req.Functions = append(req.Functions, fc)
	}
	for id, r := range declared.Resources() {
		rm, _ := r.(map[string]any)
		props, _ := rm["Properties"].(map[string]any)
		switch rm["Type"] {
		case "AWS::S3::BucketPolicy":
			doc, err := res.resolve(props["PolicyDocument"])
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			rp := ResourcePolicy{Name: id, Document: doc.(map[string]any)}
			for _, c := range s3calls {
				rp.Checks = append(rp.Checks, Probe{Action: c.Action, Resource: c.Resource, Context: map[string]string{"aws:SecureTransport": "true"},
					Why: "the statement covers the call; its aws:SecureTransport (Bool) condition is not evaluated by moto's evaluator, so DENIED here means only that TLS is what lets the call through"})
			}
			req.ResourcePolicies = append(req.ResourcePolicies, rp)
		case "AWS::KMS::Key":
			doc, err := res.resolve(props["KeyPolicy"])
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			key, err := arnOf(rep.Core.Resources[id])
			if err != nil {
				return err
			}
			rp := ResourcePolicy{Name: id, Document: doc.(map[string]any)}
			for _, a := range []string{"kms:GenerateDataKey", "kms:Decrypt"} {
				rp.Checks = append(rp.Checks,
					Probe{Action: a, Resource: key, Context: map[string]string{"aws:SourceAccount": Account}, Expect: "PERMITTED", Why: "CloudWatch alarms of this account publish to the encrypted alarm topic"},
					Probe{Action: a, Resource: key, Context: map[string]string{"aws:SourceAccount": "210987654321"}, Expect: "DENIED", Why: "another account's alarms may not use the key"})
			}
			req.ResourcePolicies = append(req.ResourcePolicies, rp)
		}
	}
	if rep.IAM, err = Evaluate(ctx, req); err != nil {
		return err
	}
	for _, f := range rep.IAM.Functions {
		for _, c := range f.Calls {
			if c.Decision == "PERMITTED" {
				continue
			}
			rep.failf("%s: %s on %s (%d× %s) is not allowed by its role as the stack created it: %s", f.Name, c.Action, c.Resource, c.Count, c.Operations, missing(c))
		}
		for _, c := range f.Forbidden {
			if c.Decision == "PERMITTED" {
				why := "the template declares no Deny for it"
				if len(c.DeclaredBy) > 0 {
					why = "statement " + strings.Join(c.DeclaredBy, ", ") + " of template.yaml denies it, the created role lacks it"
				}
				rep.failf("%s: %s on %s must stay denied (%s) but is allowed by %s: %s", f.Name, c.Action, c.Resource, c.Why, strings.Join(c.AllowedBy, ", "), why)
			}
		}
	}
	for _, p := range rep.IAM.ResourcePolicies {
		for _, c := range p.Checks {
			if c.Expect != "" && c.Decision != c.Expect {
				rep.failf("%s: %s on %s with %v is %s, want %s (%s)", p.Name, c.Action, c.Resource, c.Context, c.Decision, c.Expect, c.Why)
			}
		}
	}
	// SecureString parameters under the AWS-managed aws/ssm key need no
	// kms:Decrypt in the roles: that key's policy lets every principal of
	// the account use it through SSM. A customer key would need a grant.
	out, err := client.DescribeParameters(ctx, &ssm.DescribeParametersInput{ParameterFilters: []ssmtypes.ParameterStringFilter{
		{Key: aws.String("Path"), Option: aws.String("Recursive"), Values: []string{"/" + o.StackName + "/tenants"}}}})
	if err != nil {
		return fmt.Errorf("describe-parameters: %w", err)
	}
	for _, p := range out.Parameters {
		if p.Type == ssmtypes.ParameterTypeSecureString && aws.ToString(p.KeyId) != "alias/aws/ssm" {
			rep.failf("parameter %s is encrypted with %s, not aws/ssm: the roles grant no kms:Decrypt on it", aws.ToString(p.Name), aws.ToString(p.KeyId))
		}
	}
	return nil
}

// topicKeyCalls are the KMS requests SNS makes with a publisher's
// credentials for each of its publishes to the encrypted alarm topic
// (AWS's "KMS permissions for publishers to encrypted topics"), which no
// recorder sees: one probe per action on the topic's key.
func topicKeyCalls(rep *Report, calls []capture.Call, function string) []Probe {
	n := 0
	for _, c := range calls {
		if c.Function == function && c.Action == "sns:Publish" {
			n++
		}
	}
	key, err := arnOf(rep.Core.Resources["AlarmTopicKey"])
	if n == 0 || err != nil {
		return nil
	}
	return []Probe{
		{Action: "kms:GenerateDataKey", Resource: key, Count: n, Operations: "Publish (by SNS)"},
		{Action: "kms:Decrypt", Resource: key, Count: n, Operations: "Publish (by SNS)"},
	}
}

func missing(c Verdict) string {
	switch {
	case len(c.DeniedBy) > 0:
		return "explicitly denied by " + strings.Join(c.DeniedBy, ", ")
	case len(c.DeclaredBy) > 0:
		return "missing statement " + strings.Join(c.DeclaredBy, ", ") + " (template.yaml declares it; the created role lacks it)"
	default:
		return "no statement allows it, in the created role or in template.yaml"
	}
}

// group folds a function's calls into one probe per (action, resource).
func group(calls []capture.Call, function string) []Probe {
	var out []Probe
	for _, c := range calls {
		if c.Function != function {
			continue
		}
		i := slices.IndexFunc(out, func(p Probe) bool { return p.Action == c.Action && p.Resource == c.Resource })
		if i < 0 {
			out, i = append(out, Probe{Action: c.Action, Resource: c.Resource}), len(out)
		}
		out[i].Count++
		if !slices.Contains(strings.Split(out[i].Operations, ","), c.Operation) {
			out[i].Operations = strings.TrimPrefix(out[i].Operations+","+c.Operation, ",")
		}
	}
	slices.SortFunc(out, func(a, b Probe) int { return strings.Compare(a.Action+a.Resource, b.Action+b.Resource) })
	return out
}

// declaredPolicies are the inline policies template.yaml gives a
// function's role, resolved against the created stack.
func declaredPolicies(t Template, function string, r resolver) ([]Policy, error) {
	fn, _ := t.Resources()[function].(map[string]any)
	props, _ := fn["Properties"].(map[string]any)
	role, _ := props["Role"].(map[string]any)
	ga, _ := role["Fn::GetAtt"].([]any)
	if len(ga) == 0 {
		return nil, nil
	}
	rr, _ := t.Resources()[fmt.Sprint(ga[0])].(map[string]any)
	rp, _ := rr["Properties"].(map[string]any)
	ps, _ := rp["Policies"].([]any)
	var out []Policy
	for _, p := range ps {
		pm, _ := p.(map[string]any)
		doc, err := r.resolve(pm["PolicyDocument"])
		if err != nil {
			return nil, fmt.Errorf("%s %v: %w", ga[0], pm["PolicyName"], err)
		}
		out = append(out, Policy{Name: fmt.Sprint(pm["PolicyName"]), Document: doc.(map[string]any)})
	}
	return out, nil
}

// CheckDeployment evaluates calls recorded on a deployment that was not
// made by CloudFormation (make chaos provisions its own, with the names
// template.yaml gives them) against the roles templateFile declares,
// resolved for stack with the given physical resources. It returns the
// verdict and a line per call no statement allows.
func CheckDeployment(ctx context.Context, templateFile, stack string, resources map[string]Resource, calls []capture.Call) (IAMVerdict, []string, error) {
	declared, err := Render(ctx, filepath.Dir(templateFile), filepath.Base(templateFile))
	if err != nil {
		return IAMVerdict{}, nil, err
	}
	res := newResolver(declared, Stack{Name: stack, Resources: resources})
	var req IAMRequest
	for _, id := range sortedKeys(declared.Resources()) {
		if rm, _ := declared.Resources()[id].(map[string]any); rm["Type"] != "AWS::Lambda::Function" {
			continue
		}
		policies, err := declaredPolicies(declared, id, res)
		if err != nil {
			return IAMVerdict{}, nil, err
		}
		req.Functions = append(req.Functions, FunctionCalls{Name: id, Policies: policies, Declared: policies, Calls: group(calls, id)})
	}
	v, err := Evaluate(ctx, req)
	if err != nil {
		return v, nil, err
	}
	var denied []string
	for _, f := range v.Functions {
		for _, c := range f.Calls {
			if c.Decision != "PERMITTED" {
				denied = append(denied, fmt.Sprintf("%s: %s on %s (%d× %s) is not allowed by template.yaml's role: %s", f.Name, c.Action, c.Resource, c.Count, c.Operations, missing(c)))
			}
		}
	}
	return v, denied, nil
}
