#!/usr/bin/env bash
# Installs the npm libraries hookpack's tests check signatures with, one
# folder of scripts/ per set (versions pinned by its package-lock.json), into
# .cache/<set>:
#   verifiers  the Standard Webhooks receivers' libraries (standardwebhooks,
#              svix) a tenant's receiver verifies forwards with, for
#              pkg/local/receiver;
#   senders    the senders' own libraries that check hookpack's senders
#              from the sender's side: svix, Paddle, Linear, Square,
#              Razorpay, LINE and Coinbase Commerce for the rows of
#              pkg/provider/catalog; discord-interactions, tweetnacl,
#              @sendgrid/eventwebhook and @hubspot/api-client for
#              pkg/local/senders.
# Usage: scripts/install-verifiers.sh [set…] (default: verifiers senders).
# Idempotent: reinstalls a set only when its lock file changed;
# --prefer-offline reuses npm's cache. Needs Node.js and npm.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(verifiers senders)
for set in "${sets[@]}"; do
  src="$root/scripts/$set"
  dest="$root/.cache/$set"
  [ -f "$src/package-lock.json" ] || { echo "install-verifiers: no scripts/$set/package-lock.json" >&2; exit 1; }
  if [ -d "$dest/node_modules" ] && cmp -s "$src/package-lock.json" "$dest/package-lock.json"; then continue; fi
  echo "installing the npm libraries of scripts/$set into $dest" >&2
  mkdir -p "$dest"
  rm -rf "$dest/node_modules"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --silent --no-audit --no-fund --prefer-offline)
  # Every dependency is there.
  node -e 'const fs = require("fs");
    for (const d of Object.keys(require(process.argv[1]).dependencies))
      if (!fs.existsSync(process.argv[2] + "/node_modules/" + d + "/package.json")) process.exit(1)' \
    "$src/package.json" "$dest" || { echo "install-verifiers: $dest lacks a dependency of scripts/$set" >&2; exit 1; }
done
