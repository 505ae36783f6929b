#!/usr/bin/env bash
# Installs the npm libraries of the senders whose kind a data row cannot
# express (discord-interactions, tweetnacl, @sendgrid/eventwebhook,
# @hubspot/api-client; versions pinned by scripts/kinds/package-lock.json)
# into .cache/kinds, for the tests of pkg/local/senders, which check
# hookpack's verifiers against them.
# Idempotent: reinstalls only when the lock file changed; --prefer-offline
# reuses npm's cache. Needs Node.js and npm.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/scripts/kinds"
dest="$root/.cache/kinds"
if [ -d "$dest/node_modules" ] && cmp -s "$src/package-lock.json" "$dest/package-lock.json"; then exit 0; fi
echo "installing the npm libraries of scripts/kinds into $dest" >&2
mkdir -p "$dest"
rm -rf "$dest/node_modules"
cp "$src/package.json" "$src/package-lock.json" "$dest/"
(cd "$dest" && npm ci --silent --no-audit --no-fund --prefer-offline)
for p in discord-interactions tweetnacl @sendgrid/eventwebhook @hubspot/api-client; do
  test -f "$dest/node_modules/$p/package.json"
done
