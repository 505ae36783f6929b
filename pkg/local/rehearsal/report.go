package rehearsal

import (
	"fmt"
	"io"
	"strings"
)

// Unused returns the Allow grants no recorded call used, as
// "<function> <sid> <action> <resource>".
func (r *Report) Unused() []Grant {
	var out []Grant
	for _, f := range r.IAM.Functions {
		for _, g := range f.Grants {
			if g.Effect == "Allow" && g.Used == 0 {
				g.Policy = f.Name + " " + g.Policy
				out = append(out, g)
			}
		}
	}
	return out
}

// Write prints the report: what was created and read back, the deliveries,
// the IAM table, unused grants, each statement's removal, and failures.
func (r *Report) Write(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("core stack %s: %d resources created; tenant stack %s: %d", r.Core.Name, len(r.Core.Resources), r.TenantStack.Name, len(r.TenantStack.Resources))
	if len(r.NotCreated) > 0 {
		p("not created by moto's CloudFormation: %s", strings.Join(r.NotCreated, ", "))
	}
	for _, f := range r.Functions {
		env := make([]string, 0, len(f.Env))
		for _, k := range sortedKeys(f.Env) {
			env = append(env, k+"="+f.Env[k])
		}
		p("%s (%s, timeout %s) environment read back: %s", f.LogicalID, f.Name, f.Timeout, strings.Join(env, " "))
	}
	for _, rt := range r.Routes {
		p("route %s → %s", rt.Key, rt.IntegrationURI)
	}
	p("mapping %s: %s → %s, BatchSize %d, FunctionResponseTypes %v, MaximumConcurrency %d",
		r.Mapping.UUID, r.Mapping.EventSourceARN, r.Mapping.FunctionARN, r.Mapping.BatchSize, r.Mapping.ResponseTypes, r.Mapping.MaximumConcurrency)
	for _, n := range r.Notes {
		p("note: %s", n)
	}
	p("deliveries: %d requests sent, %d effects applied at the target, %d dead letters", len(r.Deliveries), len(r.Applied), len(r.DeadLetter))
	for _, d := range r.DeadLetter {
		p("  dead letter %s: %s", d.EventID, d.Reason)
	}
	p("\nIAM, call by call (moto.iam.access_control against the roles as the stack created them):")
	for _, f := range r.IAM.Functions {
		p("%s", f.Name)
		for _, c := range f.Calls {
			p("  %-9s %-28s %-90s %4d× %-40s %s", c.Decision, c.Action, c.Resource, c.Count, c.Operations, strings.Join(c.AllowedBy, ","))
		}
		for _, c := range f.Forbidden {
			p("  must-deny %-9s %s %s (%s) %s", c.Decision, c.Action, c.Resource, c.Why, strings.Join(c.DeniedBy, ","))
		}
		for _, s := range f.WithoutEach {
			if len(s.Breaks) == 0 {
				p("  without %s/%s: nothing breaks", s.Policy, s.Sid)
			} else {
				p("  without %s/%s: %s", s.Policy, s.Sid, strings.Join(s.Breaks, "; "))
			}
		}
	}
	for _, g := range r.Unused() {
		p("unused grant: %s/%s %s %s", g.Policy, g.Sid, g.Action, g.Resource)
	}
	for _, rp := range r.IAM.ResourcePolicies {
		for _, c := range rp.Checks {
			p("resource policy %s: %s %s %v → %s by %s%s (%s)", rp.Name, c.Action, c.Resource, c.Context, c.Decision,
				strings.Join(append(c.AllowedBy, c.DeniedBy...), ","), map[bool]string{true: ", want " + c.Expect}[c.Expect != ""], c.Why)
		}
	}
	if r.Took > 0 {
		p("took %s", r.Took.Round(100_000_000))
	}
	if len(r.Failures) == 0 {
		p("REHEARSAL PASSED")
		return
	}
	p("REHEARSAL FAILED:")
	for _, f := range r.Failures {
		p("  %s", f)
	}
}
