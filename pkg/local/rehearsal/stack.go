package rehearsal

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigatewayv2"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hookpack/hookpack/pkg/local/emulator"
	"github.com/hookpack/hookpack/pkg/local/render"
)

// Template is a rendered CloudFormation template (JSON object).
type Template map[string]any

// Render renders path the way CloudFormation sees it (package render:
// render.py, cfn-lint's pipeline, the SAM transform for template.yaml);
// each call gets its own copy.
func Render(ctx context.Context, root, path string) (Template, error) {
	out, err := render.JSON(ctx, root, path)
	if err != nil {
		return nil, err
	}
	var t Template
	if err := json.Unmarshal(out, &t); err != nil {
		return nil, fmt.Errorf("render %s: %w", path, err)
	}
	return t, nil
}

// Resources returns the template's Resources section.
func (t Template) Resources() map[string]any {
	r, _ := t["Resources"].(map[string]any)
	return r
}

// Clone returns a deep copy of t.
func (t Template) Clone() Template {
	b, _ := json.Marshal(t)
	var c Template
	_ = json.Unmarshal(b, &c)
	return c
}

// Resource is one resource a stack created.
type Resource struct {
	Type, Physical string
}

// Stack is a created stack: its resources by logical id and its outputs.
type Stack struct {
	Name      string
	Resources map[string]Resource
	Outputs   map[string]string
}

// uploadCode puts a placeholder object wherever the template's functions
// take their code from (SAM leaves CodeUri "." as a placeholder S3
// location); moto's Lambda never runs it.
func uploadCode(ctx context.Context, client *s3.Client, t Template) error {
	done := map[string]bool{}
	for _, r := range t.Resources() {
		res, _ := r.(map[string]any)
		if res["Type"] != "AWS::Lambda::Function" {
			continue
		}
		props, _ := res["Properties"].(map[string]any)
		code, _ := props["Code"].(map[string]any)
		bucket, _ := code["S3Bucket"].(string)
		key, _ := code["S3Key"].(string)
		if bucket == "" || key == "" || done[bucket+"/"+key] {
			continue
		}
		done[bucket+"/"+key] = true
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
			return fmt.Errorf("code bucket %s: %w", bucket, err)
		}
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("placeholder: the rehearsal runs bin/local/<function>/bootstrap")}); err != nil {
			return fmt.Errorf("code object s3://%s/%s: %w", bucket, key, err)
		}
	}
	return nil
}

// createStack creates name from t and waits for CREATE_COMPLETE. On a
// failed create it returns the failed resources' reasons.
func createStack(ctx context.Context, client *cloudformation.Client, name string, t Template) (Stack, error) {
	body, err := json.Marshal(t)
	if err != nil {
		return Stack{}, err
	}
	if _, err := client.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName: aws.String(name), TemplateBody: aws.String(string(body)),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam, cfntypes.CapabilityCapabilityAutoExpand},
	}); err != nil {
		return Stack{}, fmt.Errorf("create stack %s: %w", name, err)
	}
	w := cloudformation.NewStackCreateCompleteWaiter(client, func(o *cloudformation.StackCreateCompleteWaiterOptions) { o.MinDelay = time.Second })
	if err := w.Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)}, 3*time.Minute); err != nil {
		return Stack{}, fmt.Errorf("create stack %s: %w%s", name, err, failures(ctx, client, name))
	}
	return readStack(ctx, client, name)
}

func failures(ctx context.Context, client *cloudformation.Client, name string) string {
	out, err := client.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(name)})
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, e := range out.StackEvents {
		if strings.Contains(string(e.ResourceStatus), "FAILED") {
			fmt.Fprintf(&b, "; %s: %s", aws.ToString(e.LogicalResourceId), aws.ToString(e.ResourceStatusReason))
		}
	}
	return b.String()
}

// readStack reads a stack's resources and outputs back. Resources moto's
// CloudFormation does not support come back without a logical id; they are
// left out (Missing reports them).
func readStack(ctx context.Context, client *cloudformation.Client, name string) (Stack, error) {
	s := Stack{Name: name, Resources: map[string]Resource{}, Outputs: map[string]string{}}
	p := cloudformation.NewListStackResourcesPaginator(client, &cloudformation.ListStackResourcesInput{StackName: aws.String(name)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return s, fmt.Errorf("list resources of %s: %w", name, err)
		}
		for _, r := range page.StackResourceSummaries {
			if id := aws.ToString(r.LogicalResourceId); id != "" {
				s.Resources[id] = Resource{Type: aws.ToString(r.ResourceType), Physical: aws.ToString(r.PhysicalResourceId)}
			}
		}
	}
	out, err := client.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil || len(out.Stacks) == 0 {
		return s, fmt.Errorf("describe %s: %w", name, err)
	}
	for _, o := range out.Stacks[0].Outputs {
		s.Outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return s, nil
}

// Missing returns "<logical id> (<type>)" for every resource of t (its
// condition aside) that the stack did not create.
func (s Stack) Missing(t Template) []string {
	var out []string
	for id, r := range t.Resources() {
		res, _ := r.(map[string]any)
		if _, ok := s.Resources[id]; ok || res["Condition"] != nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s)", id, res["Type"]))
	}
	slices.Sort(out)
	return out
}

// Function is a created function as its role and configuration say.
type Function struct {
	LogicalID, Name, ARN, Role string
	Env                        map[string]string
	Timeout                    time.Duration
	// Policies are the role's policy documents: inline ones by name,
	// attached managed ones by ARN.
	Policies []Policy
}

// Policy is a named IAM policy document.
type Policy struct {
	Name     string         `json:"name"`
	Document map[string]any `json:"document"`
}

// readFunction reads a created function's configuration and its role's
// policies back from moto's Lambda and IAM. The configuration is read as
// raw JSON (GetFunctionConfiguration on the wire): moto keeps an
// environment value that CloudFormation resolved from a Number parameter
// as a JSON number, which the SDK refuses to decode; AWS stores every
// value as a string, and so does this (the note in the report says which).
func readFunction(ctx context.Context, endpoint string, ic *iam.Client, logicalID, name string) (Function, []string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/2015-03-31/functions/"+url.PathEscape(name)+"/configuration", nil)
	if err != nil {
		return Function{}, nil, err
	}
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20250101/"+Region+"/lambda/aws4_request")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Function{}, nil, fmt.Errorf("get-function-configuration %s: %w", name, err)
	}
	defer resp.Body.Close()
	var out struct {
		FunctionArn, Role string
		Timeout           int
		Environment       struct{ Variables map[string]any }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		return Function{}, nil, fmt.Errorf("get-function-configuration %s: status %d: %v", name, resp.StatusCode, err)
	}
	f := Function{LogicalID: logicalID, Name: name, ARN: out.FunctionArn, Role: out.Role,
		Env: map[string]string{}, Timeout: time.Duration(out.Timeout) * time.Second}
	var notes []string
	for k, v := range out.Environment.Variables {
		s, ok := v.(string)
		if !ok {
			s = fmt.Sprint(v)
			notes = append(notes, fmt.Sprintf("%s: moto returns %s=%s as a JSON %T; AWS stores it as the string %q", logicalID, k, s, v, s))
		}
		f.Env[k] = s
	}
	role := f.Role[strings.LastIndex(f.Role, "/")+1:]
	names, err := ic.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: aws.String(role)})
	if err != nil {
		return f, notes, fmt.Errorf("list-role-policies %s: %w", role, err)
	}
	for _, n := range names.PolicyNames {
		p, err := ic.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String(role), PolicyName: aws.String(n)})
		if err != nil {
			return f, notes, fmt.Errorf("get-role-policy %s %s: %w", role, n, err)
		}
		doc, err := decodePolicy(aws.ToString(p.PolicyDocument))
		if err != nil {
			return f, notes, fmt.Errorf("role %s policy %s: %w", role, n, err)
		}
		f.Policies = append(f.Policies, Policy{Name: n, Document: doc})
	}
	attached, err := ic.ListAttachedRolePolicies(ctx, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String(role)})
	if err != nil {
		return f, notes, fmt.Errorf("list-attached-role-policies %s: %w", role, err)
	}
	for _, a := range attached.AttachedPolicies {
		p, err := ic.GetPolicy(ctx, &iam.GetPolicyInput{PolicyArn: a.PolicyArn})
		if err != nil {
			return f, notes, fmt.Errorf("get-policy %s: %w", aws.ToString(a.PolicyArn), err)
		}
		v, err := ic.GetPolicyVersion(ctx, &iam.GetPolicyVersionInput{PolicyArn: a.PolicyArn, VersionId: p.Policy.DefaultVersionId})
		if err != nil {
			return f, notes, fmt.Errorf("get-policy-version %s: %w", aws.ToString(a.PolicyArn), err)
		}
		doc, err := decodePolicy(aws.ToString(v.PolicyVersion.Document))
		if err != nil {
			return f, notes, err
		}
		f.Policies = append(f.Policies, Policy{Name: aws.ToString(a.PolicyArn), Document: doc})
	}
	return f, notes, nil
}

// decodePolicy decodes a policy document as IAM returns it: URL-encoded
// JSON in AWS; moto returns plain JSON, or, for a role policy its
// CloudFormation created, the Python repr of the document ({'Statement':
// [...]}), whose quotes are swapped here (policy values hold no quotes).
func decodePolicy(s string) (map[string]any, error) {
	if !strings.HasPrefix(strings.TrimSpace(s), "{") {
		if u, err := url.QueryUnescape(s); err == nil {
			s = u
		}
	}
	if strings.HasPrefix(strings.TrimSpace(s), "{'") && !strings.Contains(s, `"`) {
		s = strings.ReplaceAll(s, "'", `"`)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		return nil, fmt.Errorf("policy document: %w", err)
	}
	return doc, nil
}

// Mapping is a created event source mapping's settings.
type Mapping struct {
	UUID, EventSourceARN, FunctionARN string
	BatchSize                         int32
	ResponseTypes                     []string
	MaximumConcurrency                int32
}

func readMapping(ctx context.Context, lc *lambda.Client, uuid string) (Mapping, error) {
	out, err := lc.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String(uuid)})
	if err != nil {
		return Mapping{}, fmt.Errorf("get-event-source-mapping %s: %w", uuid, err)
	}
	m := Mapping{UUID: uuid, EventSourceARN: aws.ToString(out.EventSourceArn), FunctionARN: aws.ToString(out.FunctionArn), BatchSize: aws.ToInt32(out.BatchSize)}
	for _, t := range out.FunctionResponseTypes {
		m.ResponseTypes = append(m.ResponseTypes, string(t))
	}
	if out.ScalingConfig != nil {
		m.MaximumConcurrency = aws.ToInt32(out.ScalingConfig.MaximumConcurrency)
	}
	return m, nil
}

// RouteKey is an HTTP API route and the integration URI it invokes.
type RouteKey struct {
	Key, IntegrationURI string
}

// importRoutes creates the HTTP API the way API Gateway does from the
// OpenAPI body SAM rendered (moto's CloudFormation has no
// AWS::ApiGatewayV2::Api): the body, its intrinsics resolved against the
// stack, is imported into moto's API Gateway (ReimportApi), and the routes and integrations are
// read back.
func importRoutes(ctx context.Context, client *apigatewayv2.Client, t Template, r resolver, logicalID string) ([]RouteKey, error) {
	res, _ := t.Resources()[logicalID].(map[string]any)
	props, _ := res["Properties"].(map[string]any)
	if props["Body"] == nil {
		return nil, fmt.Errorf("%s has no OpenAPI Body", logicalID)
	}
	body, err := r.resolve(props["Body"])
	if err != nil {
		return nil, fmt.Errorf("%s Body: %w", logicalID, err)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	// moto 5.2.1 implements ReimportApi but not ImportApi: an empty HTTP
	// API takes the body the way API Gateway imports it.
	api, err := client.CreateApi(ctx, &apigatewayv2.CreateApiInput{Name: aws.String(logicalID), ProtocolType: "HTTP"})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", logicalID, err)
	}
	if _, err := client.ReimportApi(ctx, &apigatewayv2.ReimportApiInput{ApiId: api.ApiId, Body: aws.String(string(b))}); err != nil {
		return nil, fmt.Errorf("import %s: %w", logicalID, err)
	}
	routes, err := client.GetRoutes(ctx, &apigatewayv2.GetRoutesInput{ApiId: api.ApiId})
	if err != nil {
		return nil, fmt.Errorf("get-routes: %w", err)
	}
	var out []RouteKey
	for _, rt := range routes.Items {
		rk := RouteKey{Key: aws.ToString(rt.RouteKey)}
		if id, ok := strings.CutPrefix(aws.ToString(rt.Target), "integrations/"); ok {
			in, err := client.GetIntegration(ctx, &apigatewayv2.GetIntegrationInput{ApiId: api.ApiId, IntegrationId: aws.String(id)})
			if err != nil {
				return nil, fmt.Errorf("get-integration %s: %w", id, err)
			}
			rk.IntegrationURI = aws.ToString(in.IntegrationUri)
		}
		out = append(out, rk)
	}
	slices.SortFunc(out, func(a, b RouteKey) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// addTenant runs the real scripts/tenant/tenant.sh add against the core
// stack on endpoint.
func addTenant(ctx context.Context, root, endpoint, core, id, inbound, outbound string) (string, error) {
	awsBin, err := emulator.AWSCLI()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "tenant", "tenant.sh"), "add", id, inbound, outbound)
	cmd.Dir = root
	cmd.Env = emulator.CLIEnv(endpoint, awsBin, "STACK_NAME="+core)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tenant.sh add %s: %w\n%s", id, err, out)
	}
	return string(out), nil
}
