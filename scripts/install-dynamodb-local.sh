#!/usr/bin/env bash
# Installs AWS's DynamoDB Local (the reference engine) into .cache/dynamodb-local
# from the npm package that ships it. Idempotent; needs npm and Java 17.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.cache/dynamodb-local"
pkg="amplify-dynamodb-simulator@2.9.30"
if [ -f "$dest/DynamoDBLocal.jar" ]; then exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "installing DynamoDB Local from npm package $pkg" >&2
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
tar -xzf "$tmp"/amplify-dynamodb-simulator-*.tgz -C "$tmp" package/emulator
mkdir -p "$dest"
cp -R "$tmp/package/emulator/." "$dest/"
test -f "$dest/DynamoDBLocal.jar"
