#!/usr/bin/env python3
"""Render a template the way CloudFormation will see it, through cfn-lint's
own pipeline (cfn-lint + aws-sam-translator are preinstalled): the SAM
transform applied for template.yaml, template-tenant.yaml (plain
CloudFormation) passed through. Prints JSON.

usage: render.py <template>
"""
import json
import sys

from cfnlint.decode import decode
from cfnlint.template import Template
from cfnlint.template.transforms.transform import Transform


def main() -> int:
    path = sys.argv[1]
    tpl, matches = decode(path)
    if matches:
        for m in matches:
            print(m, file=sys.stderr)
        return 1
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
