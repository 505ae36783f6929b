# Evaluates a rehearsal's AWS calls against the roles' policies with moto's
# IAM policy evaluator (moto.iam.access_control), which applies IAM's
# wildcard matching and "an explicit Deny wins, else an Allow, else denied".
# Reads the request (see iam.go) on stdin, writes the verdicts on stdout.
import json
import sys

from moto.iam.access_control import IAMPolicy, IAMPolicyStatement, PermissionResult


def listify(v):
    return v if isinstance(v, list) else [v]


def statements(policies):
    out = []
    for p in policies:
        for i, s in enumerate(listify((p.get("document") or {}).get("Statement") or [])):
            out.append({"policy": p["name"], "sid": s.get("Sid") or "%s[%d]" % (p["name"], i), "statement": s})
    return out


def decide(stmts, action, resource, context=None):
    doc = json.dumps({"Version": "2012-10-17", "Statement": [s["statement"] for s in stmts]})
    result = IAMPolicy(doc).is_action_permitted(action, resource, None, context) if stmts else PermissionResult.NEUTRAL
    by = {"allowedBy": [], "deniedBy": []}
    for s in stmts:
        r = IAMPolicyStatement(s["statement"]).is_action_permitted(action, resource, None, context)
        if r == PermissionResult.PERMITTED:
            by["allowedBy"].append(s["sid"])
        elif r == PermissionResult.DENIED:
            by["deniedBy"].append(s["sid"])
    by["decision"] = result.name
    return by


def function(f):
    f["calls"] = f.get("calls") or []
    stmts = statements(f.get("policies") or [])
    declared = statements(f.get("declared") or [])
    out = {"name": f["name"], "calls": [], "forbidden": [], "grants": [], "withoutEach": []}
    for c in f["calls"]:
        v = decide(stmts, c["action"], c["resource"])
        v.update(c)
        if v["decision"] != "PERMITTED":
            v["declaredBy"] = decide(declared, c["action"], c["resource"])["allowedBy"]
        out["calls"].append(v)
    for p in f.get("forbidden") or []:
        v = decide(stmts, p["action"], p["resource"])
        v.update(p)
        v["declaredBy"] = decide(declared, p["action"], p["resource"])["deniedBy"]
        out["forbidden"].append(v)
    for s in stmts:
        st = s["statement"]
        for a in listify(st.get("Action", [])):
            for r in listify(st.get("Resource", "*")):
                grant = IAMPolicyStatement({"Effect": st["Effect"], "Action": a, "Resource": r})
                probes = f["calls"] if st["Effect"] == "Allow" else (f.get("forbidden") or [])
                used = sum(1 for c in probes if grant.is_action_permitted(c["action"], c["resource"]) != PermissionResult.NEUTRAL)
                out["grants"].append({"policy": s["policy"], "sid": s["sid"], "effect": st["Effect"], "action": a, "resource": r, "used": used})
    for i, s in enumerate(stmts):
        rest = stmts[:i] + stmts[i + 1:]
        breaks = []
        for c in f["calls"]:
            if decide(stmts, c["action"], c["resource"])["decision"] == "PERMITTED" and decide(rest, c["action"], c["resource"])["decision"] != "PERMITTED":
                breaks.append("%s %s is denied" % (c["action"], c["resource"]))
        for p in f.get("forbidden") or []:
            if decide(stmts, p["action"], p["resource"])["decision"] != "PERMITTED" and decide(rest, p["action"], p["resource"])["decision"] == "PERMITTED":
                breaks.append("%s %s is allowed (%s)" % (p["action"], p["resource"], p["why"]))
        out["withoutEach"].append({"policy": s["policy"], "sid": s["sid"], "breaks": breaks})
    return out


def resource_policy(p):
    stmts = statements([p])
    checks = []
    for c in p.get("checks") or []:
        v = decide(stmts, c["action"], c["resource"], c.get("context"))
        v.update(c)
        checks.append(v)
    return {"name": p["name"], "checks": checks}


def main():
    req = json.load(sys.stdin)
    json.dump({
        "functions": [function(f) for f in req.get("functions") or []],
        "resourcePolicies": [resource_policy(p) for p in req.get("resourcePolicies") or []],
    }, sys.stdout)


if __name__ == "__main__":
    main()
