#!/usr/bin/env bash
# Installs the npm Standard Webhooks libraries a tenant's receiver verifies
# forwards with (standardwebhooks, svix; versions pinned by
# scripts/verifiers/package-lock.json) into .cache/verifiers, for the tests
# of pkg/local/receiver. Idempotent: reinstalls only when the lock file
# changed; --prefer-offline reuses npm's cache. Needs Node.js and npm.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/scripts/verifiers"
dest="$root/.cache/verifiers"
if [ -d "$dest/node_modules" ] && cmp -s "$src/package-lock.json" "$dest/package-lock.json"; then exit 0; fi
echo "installing the npm Standard Webhooks verifiers into $dest" >&2
mkdir -p "$dest"
rm -rf "$dest/node_modules"
cp "$src/package.json" "$src/package-lock.json" "$dest/"
(cd "$dest" && npm ci --silent --no-audit --no-fund --prefer-offline)
test -f "$dest/node_modules/standardwebhooks/package.json" && test -f "$dest/node_modules/svix/package.json"
