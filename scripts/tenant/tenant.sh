#!/usr/bin/env bash
# Onboard, update or remove a tenant of a deployed hookpack core stack, as
# infrastructure as code. Each tenant is its own small CloudFormation stack,
# "<core>-tenant-<tenant>", from template-tenant.yaml (FIFO queue, FIFO DLQ,
# event source mapping to the core worker; the core stack's watch alerts on
# its queues, reading OLDEST_MESSAGE_ALARM_SECONDS from the queue's tag), importing the core
# stack's exports; its credentials are KMS-encrypted SecureString parameters
# /<core>/tenants/<tenant>/{inbound,outbound}. The set of tenant stacks is
# the tenant list: `sam deploy` of the core stack never touches a tenant, and
# the number of tenants is bounded by account quotas (docs/scale.md), not by
# one stack's 500 resources. Runs may overlap: the id list the ingest
# function loads is changed under a lock (an item of the idempotency table).
#
#   scripts/tenant/tenant.sh add    <tenant> <inbound.json> [outbound.json]
#   scripts/tenant/tenant.sh remove <tenant> [--force]
#   scripts/tenant/tenant.sh list
#   scripts/tenant/tenant.sh check  <tenant> <inbound.json> [outbound.json]
#   scripts/tenant/tenant.sh check  <tenants.json>...
#   scripts/tenant/tenant.sh pause  <tenant> <destination> --reason "…"
#   scripts/tenant/tenant.sh resume <tenant> <destination>
#   scripts/tenant/tenant.sh status <tenant>
#
# inbound.json:  {"providers": {"stripe": {"secrets": ["whsec_…"]}}}
# outbound.json: {"targetUrl": "https://…", "secrets": ["whsec_…"]}
# Env: STACK_NAME   core stack (default hookpack)
#      TENANT_MAX_CONCURRENCY, MAX_RECEIVE_COUNT, OLDEST_MESSAGE_ALARM_SECONDS
#                   tenant stack parameters (the template's defaults on
#                   create, the stack's current values on update); add
#                   refuses a MaxReceiveCount below 10 x the core stack's
#                   WorkerMaxAttempts + 20
#      KMS_KEY_ID   optional key for the parameters (default: aws/ssm)
#      AWS_ENDPOINT_URL  every call goes there when set (emulators; awscli v1
#                   ignores it for SQS in us-east-1, so it is passed explicitly)
#      AWS_REGION / AWS_PROFILE as usual. Needs the aws CLI and Go (the
#      configuration files are checked by scripts/tenant/check).
set -euo pipefail

stack=${STACK_NAME:-hookpack}
template=${TENANT_TEMPLATE:-$(cd "$(dirname "$0")/../.." && pwd)/template-tenant.yaml}
die() { echo "tenant: $*" >&2; exit 1; }
aws_() { aws ${AWS_ENDPOINT_URL:+--endpoint-url "$AWS_ENDPOINT_URL"} "$@"; }

valid_id() {
  [[ $1 =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] || die "invalid tenant id '$1': 1-40 characters of a-z, 0-9 and '-', not starting with '-'"
  [[ $1 != *-dlq ]] || die "invalid tenant id '$1': must not end in '-dlq' (reserved for dead-letter queues)"
}

# check <tenant> <inbound.json> [outbound.json], or check <tenants.json>...
# (make run's tenants files): the functions' own validation (valid JSON, no
# unknown field, no empty secret, known providers, well-formed URLs) without
# any AWS call, before anything is written; every problem of every file is
# named, not the first. Exits 1 on any.
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
id_lists() { aws_ ssm get-parameters-by-path --path "$ids_path" --query 'Parameters[].[Name,Value]' --output text; }
# The lists are read, changed and written back; two runs at once would each
# write back a list without the other's change. The lock is the item
# "_tenant-ids-lock" of the core stack's idempotency table (tenant ids cannot
# start with "_", so no claim can be it), taken with one conditional put when
# it is free or expired: DynamoDB decides, so a lock left by a run that died
# is taken over by exactly one run, and only its holder deletes it.
lock_key='{"id":{"S":"_tenant-ids-lock"}}'
with_lock() {
  local now held err waited=0 rc=0
  lock_table=$(describe "$stack" "Stacks[0].Outputs[?OutputKey=='IdempotencyTableName'].OutputValue")
  [ -n "$lock_table" ] || die "core stack $stack has no IdempotencyTableName output (deploy template.yaml first, or set STACK_NAME)"
  lock_holder="$$@$(hostname)#$RANDOM"
  err=$(mktemp)
  until now=$(date +%s) && held=$(aws_ dynamodb put-item --table-name "$lock_table" \
    --item "{\"id\":{\"S\":\"_tenant-ids-lock\"},\"holder\":{\"S\":\"$lock_holder\"},\"expiration\":{\"N\":\"$((now + 300))\"}}" \
    --condition-expression "attribute_not_exists(id) OR #e < :now" --expression-attribute-names '{"#e":"expiration"}' \
    --expression-attribute-values "{\":now\":{\"N\":\"$now\"}}" \
    --return-values ALL_OLD --query Attributes.holder.S --output text 2>"$err"); do
    grep -q ConditionalCheckFailed "$err" || { cat "$err" >&2; rm -f "$err"; die "could not take the tenant list lock in $lock_table"; }
    if [ "$waited" -ge 120 ]; then
      rm -f "$err"
      held=$(aws_ dynamodb get-item --table-name "$lock_table" --key "$lock_key" --query Item.holder.S --output text 2>/dev/null || true)
      die "the tenant list is locked by ${held:-another run} (item _tenant-ids-lock of $lock_table); retry when it is done"
    fi
    sleep 1; waited=$((waited + 1))
  done
  rm -f "$err"
  [ "$held" = None ] || echo "taking over the tenant list lock left by $held" >&2
  trap 'unlock; exit 130' INT TERM
  "$@" || rc=$?
  unlock
  trap - INT TERM
  return "$rc"
}
unlock() {
  aws_ dynamodb delete-item --table-name "$lock_table" --key "$lock_key" \
    --condition-expression "#h = :me" --expression-attribute-names '{"#h":"holder"}' \
    --expression-attribute-values "{\":me\":{\"S\":\"$lock_holder\"}}" >/dev/null 2>&1 ||
    echo "tenant: the tenant list lock was taken over while this run held it (over 5 minutes): check the ids with '$0 list'" >&2
}
register_id() {
  local id=$1 name value target="" tval="" next=0
  while IFS=$'\t' read -r name value; do
    [ -n "$name" ] || continue
    [[ ",$value," == *",$id,"* ]] && return 0
    [ "${name##*/}" -ge "$next" ] 2>/dev/null && next=$((${name##*/} + 1))
    if [ -z "$target" ] && [ $((${#value} + 1 + ${#id})) -le 4096 ]; then target=$name tval=$value; fi
  done < <(id_lists)
  aws_ ssm put-parameter --name "${target:-$ids_path/$next}" --type StringList --overwrite --value "${tval:+$tval,}$id" >/dev/null
}
unregister_id() {
  local id=$1 name value rest
  while IFS=$'\t' read -r name value; do
    [[ ",$value," == *",$id,"* ]] || continue
    rest=${value/#$id,/}; rest=${rest/%,$id/}; rest=${rest//,$id,/,}; [ "$rest" = "$id" ] && rest=
    if [ -n "$rest" ]; then aws_ ssm put-parameter --name "$name" --type StringList --overwrite --value "$rest" >/dev/null
    else aws_ ssm delete-parameter --name "$name" >/dev/null; fi
  done < <(id_lists)
}

# The tenant stack parameters that may come from the environment.
settable="TenantMaxConcurrency:TENANT_MAX_CONCURRENCY MaxReceiveCount:MAX_RECEIVE_COUNT OldestMessageAlarmSeconds:OLDEST_MESSAGE_ALARM_SECONDS"
for pair in $settable; do
  env=${pair#*:}
  [[ -z ${!env:-} || ${!env} =~ ^[0-9]+$ ]] || die "$env=${!env} is not a number"
done

# parameters <tenant> [previous]: the tenant stack's parameters as JSON.
# previous holds "Key<TAB>Value" lines of the stack being updated; a value
# not set in the environment keeps its previous value, or the template's
# default on create. (Values are passed explicitly rather than with
# UsePreviousValue, which moto's CloudFormation cannot handle.)
parameters() {
  local p pair key v
  p="[{\"ParameterKey\":\"CoreStack\",\"ParameterValue\":\"$stack\"},{\"ParameterKey\":\"TenantId\",\"ParameterValue\":\"$1\"}"
  for pair in $settable; do
    key=${pair%%:*}; v=$(param "$key" "${2:-}")
    [ -z "$v" ] || p+=",{\"ParameterKey\":\"$key\",\"ParameterValue\":\"$v\"}"
  done
  echo "$p]"
}

# param <key> [previous]: a settable parameter's value from the environment,
# else from previous (as parameters), else nothing (the template's default).
param() {
  local pair env
  for pair in $settable; do
    [ "${pair%%:*}" = "$1" ] || continue
    env=${pair#*:}
    if [ -n "${!env:-}" ]; then echo "${!env}"; else awk -F'\t' -v k="$1" '$1 == k {print $2}' <<<"${2:-}"; fi
  done
}

# check_receives <previous>: refuses a tenant queue whose maxReceiveCount
# (MAX_RECEIVE_COUNT, else the stack's current value, else the template's
# default) SQS would reach before the core stack's worker gives up on a
# failing message with its reason (WorkerMaxAttempts; scripts/tenant/check
# -receives).
check_receives() {
  local attempts receives
  attempts=$(describe "$stack" "Stacks[0].Parameters[?ParameterKey=='WorkerMaxAttempts'].ParameterValue")
  [ -n "$attempts" ] || die "core stack $stack has no WorkerMaxAttempts parameter (deploy template.yaml first, or set STACK_NAME)"
  receives=$(param MaxReceiveCount "$1")
  [ -n "$receives" ] || receives=$(awk '/^  MaxReceiveCount:/ {p = 1} p && $1 == "Default:" {print $2; exit}' "$template")
  (cd "$(dirname "$0")/../.." && go run ./scripts/tenant/check -receives "$receives" "$attempts") || exit 1
}

# describe <stack> <query>: the query's text output, or nothing when the
# stack does not exist.
describe() { aws_ cloudformation describe-stacks --stack-name "$1" --query "$2" --output text 2>/dev/null || true; }

output() { awk -F'\t' -v k="$1" '$1 == k {print $2}' <<<"$2"; }

# depth <url>: visible + in flight + delayed messages, or nothing when the
# queue does not exist.
depth() {
  aws_ sqs get-queue-attributes --queue-url "$1" \
    --attribute-names ApproximateNumberOfMessages ApproximateNumberOfMessagesNotVisible ApproximateNumberOfMessagesDelayed \
    --query "sum(Attributes.[to_number(ApproximateNumberOfMessages),to_number(ApproximateNumberOfMessagesNotVisible),to_number(ApproximateNumberOfMessagesDelayed)])" \
    --output text 2>/dev/null || true
}

put_param() { # put_param <tenant> <inbound|outbound> <file>
  local args=(--name "/$stack/tenants/$1/$2" --type SecureString --overwrite --value "file://$3")
  [ -n "${KMS_KEY_ID:-}" ] && args+=(--key-id "$KMS_KEY_ID")
  aws_ ssm put-parameter "${args[@]}" >/dev/null
  echo "stored $2 credentials of $1 at /$stack/tenants/$1/$2" >&2
}

failure() { # failure <stack>: why the last operation failed, from the stack's events
  aws_ cloudformation describe-stack-events --stack-name "$1" \
    --query "StackEvents[?contains(ResourceStatus,'FAILED')].[LogicalResourceId,ResourceStatusReason]" --output text 2>/dev/null | head -5
}

add() {
  [ $# -ge 2 ] || die "usage: add <tenant> <inbound.json> [outbound.json]"
  local id=$1 name core prefix status prev q url n out routes
  valid_id "$id"
  local missing=""
  for f in "${@:2:2}"; do [ -f "$f" ] || missing+=" $f"; done
  [ -z "$missing" ] || die "no such file:$missing"
  check "$id" "${@:2:2}"
  [ -f "$template" ] || die "tenant template $template not found (set TENANT_TEMPLATE)"
  core=$(describe "$stack" "Stacks[0].Outputs[].[OutputKey,OutputValue]")
  prefix=$(output QueueNamePrefix "$core")
  [ -n "$prefix" ] || die "core stack $stack not found or has no QueueNamePrefix output (deploy template.yaml first, or set STACK_NAME)"
  name="$stack-tenant-$id"
  prev=$(describe "$name" "Stacks[0].[StackStatus,Parameters]")
  status=$(head -1 <<<"$prev" | cut -f1)
  case "$status" in
    "")
      check_receives ""
      # Queues kept from an earlier removal (DeletionPolicy: Retain) would make
      # the create fail; they may hold messages, so they are never deleted here.
      for q in "$prefix$id.fifo" "$prefix$id-dlq.fifo"; do
        url=$(aws_ sqs get-queue-url --queue-name "$q" --query QueueUrl --output text 2>/dev/null) || continue
        die "queue $q from an earlier removal still exists ($(depth "$url") messages): replay or drain it, delete it, then add again"
      done
      aws_ cloudformation create-stack --stack-name "$name" --template-body "file://$template" \
        --parameters "$(parameters "$id")" \
        --tags "Key=hookpack:core-stack,Value=$stack" "Key=hookpack:tenant,Value=$id" >/dev/null
      echo "creating stack $name…" >&2
      aws_ cloudformation wait stack-create-complete --stack-name "$name" ||
        die "stack $name failed: $(failure "$name") (delete it with: $0 remove $id --force)"
      ;;
    CREATE_COMPLETE | UPDATE_COMPLETE | UPDATE_ROLLBACK_COMPLETE)
      check_receives "$prev"
      if out=$(aws_ cloudformation update-stack --stack-name "$name" --template-body "file://$template" \
        --parameters "$(parameters "$id" "$prev")" 2>&1); then
        echo "updating stack $name…" >&2
        aws_ cloudformation wait stack-update-complete --stack-name "$name" || die "stack $name update failed: $(failure "$name")"
      elif [[ $out == *"No updates are to be performed"* ]]; then
        echo "stack $name is up to date" >&2
      else
        die "update $name: $out"
      fi
      ;;
    *) die "stack $name is $status; wait for it to settle (or fix it in the CloudFormation console)" ;;
  esac
  put_param "$id" inbound "$2"
  if [ $# -ge 3 ]; then
    put_param "$id" outbound "$3"
    # The destinations' names and filters, which the ingest may read (it
    # queues each destination's events on a stream of their own).
    routes=$(mktemp)
    (cd "$(dirname "$0")/../.." && go run ./scripts/tenant/check -routes "$(cd "$(dirname "$3")" && pwd)/$(basename "$3")") >"$routes" || { rm -f "$routes"; exit 1; }
    put_param "$id" routes "$routes"
    rm -f "$routes"
  fi
  with_lock register_id "$id"
  [ -z "$status" ] || echo "credentials updated; warm functions pick them up within 5 minutes" >&2
  echo "webhook URL: $(output WebhookBaseUrl "$core")/webhooks/$id/<provider>"
}

remove() {
  [ $# -ge 1 ] || die "usage: remove <tenant> [--force]"
  local id=$1 force=${2:-} name outputs urls url n kept="" ledger
  valid_id "$id"
  name="$stack-tenant-$id"
  outputs=$(describe "$name" "Stacks[0].Outputs[].[OutputKey,OutputValue]")
  [ -n "$outputs" ] || die "tenant $id has no stack $name in core stack $stack"
  urls="$(output QueueUrl "$outputs") $(output DeadLetterQueueUrl "$outputs")"
  if [ "$force" != --force ]; then
    for url in $urls; do
      n=$(depth "$url")
      [ "${n:-0}" = 0 ] || die "${url##*/} still holds $n messages; drain or replay them, or pass --force (the queue's messages are deleted; a non-empty DLQ is kept)"
    done
  fi
  # Id and credentials first: new deliveries stop being accepted while the
  # queues go.
  with_lock unregister_id "$id"
  aws_ ssm delete-parameters --names "/$stack/tenants/$id/inbound" "/$stack/tenants/$id/outbound" "/$stack/tenants/$id/routes" >/dev/null
  # Its destinations' pauses and failure streaks (package destination), so
  # a tenant added again under the id starts with none paused.
  ledger=$(describe "$stack" "Stacks[0].Outputs[?OutputKey=='LedgerTableName'].OutputValue")
  [ -z "$ledger" ] || aws_ dynamodb delete-item --table-name "$ledger" --key "{\"pk\":{\"S\":\"destinations#$id\"}}"
  aws_ cloudformation delete-stack --stack-name "$name"
  echo "deleting stack $name…" >&2
  aws_ cloudformation wait stack-delete-complete --stack-name "$name" || die "stack $name delete failed: $(failure "$name")"
  # The stack retains its queues; delete them unless a message arrived in
  # the meantime (with --force: unless it is a DLQ holding dead letters).
  for url in $urls; do
    n=$(depth "$url"); [ -n "$n" ] || continue
    if [ "$n" = 0 ] || { [ "$force" = --force ] && [[ $url != *-dlq.fifo ]]; }; then
      aws_ sqs delete-queue --queue-url "$url"
    else
      kept+=" ${url##*/} ($n messages)"
    fi
  done
  [ -z "$kept" ] || echo "kept:$kept — replay or delete them before adding $id again" >&2
  echo "removed $id" >&2
}

list() {
  local ids params p
  ids=$(aws_ cloudformation describe-stacks \
    --query "Stacks[?Tags[?Key=='hookpack:core-stack' && Value=='$stack']].Parameters[] | [?ParameterKey=='TenantId'].ParameterValue" \
    --output text | tr '\t' '\n' | sed '/^$/d' | sort)
  [ -z "$ids" ] || echo "$ids"
  # Credentials without a stack (an interrupted add or remove) are reported.
  params=$(aws_ ssm get-parameters-by-path --path "/$stack/tenants" --recursive \
    --query "Parameters[].Name" --output text | tr '\t' '\n' | sed -n 's#^/[^/]*/tenants/\([^/]*\)/.*#\1#p' | sort -u)
  for p in $params; do
    grep -qx "$p" <<<"$ids" || echo "tenant: credentials of $p exist without a tenant stack: run add or remove for it" >&2
  done
}

# destination pause|resume|status …: scripts/destination on the core stack
# (a paused destination's events wait on the queue until it is resumed;
# docs/operations.md). Built, not `go run`, so that its exit status (2: bad
# usage, an unknown tenant or destination) is this script's.
destination() {
  local root bin rc=0
  root=$(cd "$(dirname "$0")/../.." && pwd)
  bin=$(mktemp -d)
  (cd "$root" && go build -o "$bin/destination" ./scripts/destination) || { rm -rf "$bin"; exit 1; }
  "$bin/destination" -stack "$stack" "$@" || rc=$?
  rm -rf "$bin"
  exit "$rc"
}

cmd=${1:-}; shift || true
case "$cmd" in
  add) add "$@" ;;
  remove) remove "$@" ;;
  list) list ;;
  check) check "$@" ;;
  pause|resume|status) destination "$cmd" "$@" ;;
  *) die "usage: tenant.sh add <tenant> <inbound.json> [outbound.json] | remove <tenant> [--force] | list | check <tenant> <inbound.json> [outbound.json] | check <tenants.json>... | pause <tenant> <destination> --reason \"…\" | resume <tenant> <destination> | status <tenant>" ;;
esac
