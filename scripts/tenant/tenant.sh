#!/usr/bin/env bash
# Onboard, update or remove a tenant of a deployed hookpack stack, as
# infrastructure as code: credentials go to SSM Parameter Store as
# KMS-encrypted SecureString parameters, and the tenant's queue, DLQ, worker
# mapping and alarms come from the stack itself (template.yaml's
# Fn::ForEach over the TenantIds parameter), updated with the previous
# template, so nothing drifts from the stack and template.yaml is never edited.
#
#   scripts/tenant/tenant.sh add    <tenant> <inbound.json> [outbound.json]
#   scripts/tenant/tenant.sh remove <tenant> [--force]
#   scripts/tenant/tenant.sh list
#
# inbound.json:  {"providers": {"stripe": {"secrets": ["whsec_…"]}}}
# outbound.json: {"targetUrl": "https://…", "secrets": ["whsec_…"]}
# Env: STACK_NAME (default hookpack), AWS_REGION / AWS_PROFILE as usual,
#      KMS_KEY_ID (optional; default is the account's aws/ssm key).
set -euo pipefail

stack=${STACK_NAME:-hookpack}
die() { echo "tenant: $*" >&2; exit 1; }

valid_id() {
  [[ $1 =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] || die "invalid tenant id '$1': 1-40 characters of a-z, 0-9 and '-', not starting with '-'"
}

current_ids() {
  aws cloudformation describe-stacks --stack-name "$stack" \
    --query "Stacks[0].Parameters[?ParameterKey=='TenantIds'].ParameterValue" --output text
}

# update_stack <comma-separated ids>: same template, new TenantIds, every
# other parameter kept.
update_stack() {
  local ids=$1 params keys k
  keys=$(aws cloudformation describe-stacks --stack-name "$stack" \
    --query "Stacks[0].Parameters[].ParameterKey" --output text)
  params="[{\"ParameterKey\":\"TenantIds\",\"ParameterValue\":\"$ids\"}"
  for k in $keys; do
    [ "$k" = TenantIds ] || params+=",{\"ParameterKey\":\"$k\",\"UsePreviousValue\":true}"
  done
  params+="]"
  aws cloudformation update-stack --stack-name "$stack" --use-previous-template \
    --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND --parameters "$params" >/dev/null
  echo "updating stack $stack (TenantIds=$ids)…" >&2
  aws cloudformation wait stack-update-complete --stack-name "$stack"
}

# check <tenant> <inbound.json> [outbound.json]: the functions' own validation
# (no empty secret, known providers, well-formed URLs) before anything is written.
check() {
  local root files=() f
  root=$(cd "$(dirname "$0")/../.." && pwd)
  for f in "$@"; do [ -f "$f" ] && f=$(cd "$(dirname "$f")" && pwd)/$(basename "$f"); files+=("$f"); done
  (cd "$root" && go run ./scripts/tenant/check "${files[@]}") || exit 1
}

# The onboarded tenant ids, which the ingest function loads at cold start and
# every minute (ids not listed get 404 without an AWS call): StringList
# parameters /<stack>/tenant-ids/<n> of at most 4 KB each.
ids_path="/$stack/tenant-ids"
id_lists() { aws ssm get-parameters-by-path --path "$ids_path" --query 'Parameters[].[Name,Value]' --output text; }
register_id() {
  local id=$1 name value target="" tval="" next=0
  while IFS=$'\t' read -r name value; do
    [ -n "$name" ] || continue
    [[ ",$value," == *",$id,"* ]] && return 0
    [ "${name##*/}" -ge "$next" ] 2>/dev/null && next=$((${name##*/} + 1))
    if [ -z "$target" ] && [ $((${#value} + 1 + ${#id})) -le 4096 ]; then target=$name tval=$value; fi
  done < <(id_lists)
  aws ssm put-parameter --name "${target:-$ids_path/$next}" --type StringList --overwrite --value "${tval:+$tval,}$id" >/dev/null
}
unregister_id() {
  local id=$1 name value rest
  while IFS=$'\t' read -r name value; do
    [[ ",$value," == *",$id,"* ]] || continue
    rest=${value/#$id,/}; rest=${rest/%,$id/}; rest=${rest//,$id,/,}; [ "$rest" = "$id" ] && rest=
    if [ -n "$rest" ]; then aws ssm put-parameter --name "$name" --type StringList --overwrite --value "$rest" >/dev/null
    else aws ssm delete-parameter --name "$name" >/dev/null; fi
  done < <(id_lists)
}

put_param() { # put_param <tenant> <inbound|outbound> <file>
  local args=(--name "/$stack/tenants/$1/$2" --type SecureString --overwrite --value "file://$3")
  [ -n "${KMS_KEY_ID:-}" ] && args+=(--key-id "$KMS_KEY_ID")
  aws ssm put-parameter "${args[@]}" >/dev/null
  echo "stored $2 credentials of $1 at /$stack/tenants/$1/$2" >&2
}

# logical ids drop non-alphanumerics: "acme-eu" and "acmeeu" would collide.
logical() { echo "${1//-/}"; }

cmd=${1:-}; shift || true
case "$cmd" in
  add)
    [ $# -ge 2 ] || die "usage: add <tenant> <inbound.json> [outbound.json]"
    id=$1; valid_id "$id"
    [ -f "$2" ] || die "no such file: $2"
    ids=$(current_ids)
    IFS=, read -r -a list <<<"$ids"
    present=false
    for t in "${list[@]}"; do
      [ "$t" = "$id" ] && present=true && continue
      [ "$(logical "$t")" = "$(logical "$id")" ] && die "'$id' collides with existing tenant '$t' (same name without '-')"
    done
    check "$id" "${@:2:2}"
    put_param "$id" inbound "$2"
    [ $# -ge 3 ] && put_param "$id" outbound "$3"
    register_id "$id"
    if $present; then
      echo "$id already in the stack; credentials updated (warm functions pick them up within 5 minutes)" >&2
    else
      update_stack "${ids:+$ids,}$id"
    fi
    echo "webhook URL: $(aws cloudformation describe-stacks --stack-name "$stack" \
      --query "Stacks[0].Outputs[?OutputKey=='WebhookBaseUrl'].OutputValue" --output text)/webhooks/$id/<provider>"
    ;;
  remove)
    [ $# -ge 1 ] || die "usage: remove <tenant> [--force]"
    id=$1; valid_id "$id"; force=${2:-}
    ids=$(current_ids)
    IFS=, read -r -a list <<<"$ids"
    keep=()
    for t in "${list[@]}"; do [ "$t" = "$id" ] || keep+=("$t"); done
    [ ${#keep[@]} -lt ${#list[@]} ] || die "tenant $id is not in stack $stack"
    [ ${#keep[@]} -gt 0 ] || die "cannot remove the last tenant (TenantIds must not be empty)"
    if [ "$force" != "--force" ]; then
      for q in "$stack-$id.fifo" "$stack-$id-dlq.fifo"; do
        url=$(aws sqs get-queue-url --queue-name "$q" --query QueueUrl --output text)
        n=$(aws sqs get-queue-attributes --queue-url "$url" \
          --attribute-names ApproximateNumberOfMessages ApproximateNumberOfMessagesNotVisible \
          --query "sum(Attributes.[to_number(ApproximateNumberOfMessages),to_number(ApproximateNumberOfMessagesNotVisible)])" --output text)
        [ "${n%.*}" = 0 ] || die "$q still holds $n messages; drain or replay them, or pass --force to delete them with the queue"
      done
    fi
    update_stack "$(IFS=,; echo "${keep[*]}")"
    unregister_id "$id"
    aws ssm delete-parameters --names "/$stack/tenants/$id/inbound" "/$stack/tenants/$id/outbound" >/dev/null
    echo "removed $id" >&2
    ;;
  list)
    current_ids | tr ',' '\n'
    ;;
  *)
    die "usage: tenant.sh add <tenant> <inbound.json> [outbound.json] | remove <tenant> [--force] | list"
    ;;
esac
