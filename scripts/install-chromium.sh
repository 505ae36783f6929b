#!/usr/bin/env bash
# Installs Chromium for the console's browser test (scripts/console), from
# the distribution's package: `apt-get install chromium` as root on Debian
# (this project's image), otherwise it says how. Idempotent: a chromium or
# chromium-browser already on PATH (or CHROME_PATH) is kept.
set -euo pipefail
for c in "${CHROME_PATH:-}" chromium chromium-browser google-chrome; do
  if [ -n "$c" ] && command -v "$c" >/dev/null 2>&1; then exit 0; fi
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium (Debian's package) for the console's browser test" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  command -v chromium >/dev/null
  exit 0
fi
echo "missing: chromium (the console's browser test drives it)" >&2
echo "  install: sudo apt-get install chromium  |  brew install --cask chromium  (or set CHROME_PATH)" >&2
exit 1
