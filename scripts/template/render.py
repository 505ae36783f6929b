#!/usr/bin/env python3
"""Render template.yaml the way CloudFormation will see it: the
AWS::LanguageExtensions transform (Fn::ForEach expanded for the given
TenantIds) followed by the SAM transform, using cfn-lint's own pipeline
(cfn-lint + aws-sam-translator are preinstalled). Prints JSON.

usage: render.py template.yaml [tenant,ids]
"""
import json
import sys

from cfnlint.decode import decode
from cfnlint.template import Template
from cfnlint.template.transforms.transform import Transform


def main() -> int:
    path = sys.argv[1]
    tenants = sys.argv[2] if len(sys.argv) > 2 else None
    tpl, matches = decode(path)
    if matches:
        for m in matches:
            print(m, file=sys.stderr)
        return 1
    if tenants is not None:
        tpl["Parameters"]["TenantIds"]["Default"] = tenants
    cfn = Template(path, tpl, ["us-east-1"])
    errs = Transform().transform(cfn)
    if errs:
        for m in errs:
            print(m, file=sys.stderr)
        return 1
    json.dump(cfn.template, sys.stdout, indent=1, sort_keys=True, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
