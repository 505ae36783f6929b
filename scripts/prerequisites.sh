#!/usr/bin/env bash
# Checks the tools `make run` and `make test` need that they cannot fetch
# themselves, and prints how to install each one missing. Usage:
#   scripts/prerequisites.sh [cfn-lint] [aws]   (cfn-lint: also the template linter;
#   aws: also the aws CLI and python3 that tenant.sh and the deploy rehearsal run)
set -uo pipefail
missing=0
need() { # need <command> <what it is for> <how to install>
  command -v "$1" >/dev/null 2>&1 && return
  printf 'missing: %s (%s)\n  install: %s\n' "$1" "$2" "$3" >&2
  missing=1
}
need go "builds and tests" "https://go.dev/dl/ (Go 1.26)"
need java "runs DynamoDB Local" "apt-get install openjdk-17-jre-headless  |  brew install openjdk@17"
need node "runs npm, and the npm libraries make test verifies signatures with" "apt-get install nodejs npm  |  brew install node (Node.js 20)"
need npm "fetches DynamoDB Local (make run, make test) and the tests' npm libraries into .cache/" "apt-get install npm  |  brew install node"
need moto_server "the local SQS, SSM, S3 and CloudFormation" "pipx install 'moto[server]==5.2.1'  (or: pip install 'moto[server]==5.2.1')"
for extra in "$@"; do
  case $extra in
    cfn-lint) need cfn-lint "checks template.yaml and template-tenant.yaml" "pipx install cfn-lint  (or: pip install cfn-lint)" ;;
    aws)
      need aws "scripts/tenant/tenant.sh and the deploy rehearsal (make rehearse, make test)" "pipx install awscli  (or: pip install awscli)"
      need python3 "the rehearsal's IAM check (moto's policy evaluator)" "apt-get install python3  |  brew install python" ;;
  esac
done
exit $missing
