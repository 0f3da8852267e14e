#!/usr/bin/env bash
# One command from a fresh clone: install what is missing, build, and run a real MCP server
# through `mcp-sandbox run` on the default backend, listing its tools.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -s)" = "Linux" ] && ! command -v bwrap >/dev/null; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "installing bubblewrap (the local sandbox needs it)..." >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >&2
  else
    echo "mcp-sandbox's local backend needs bubblewrap: sudo apt-get install bubblewrap" >&2
    exit 1
  fi
fi

npx --yes pnpm@12.4.2 install --frozen-lockfile >&2
TURBO_TELEMETRY_DISABLED=1 npx --yes pnpm@12.4.2 exec turbo run build --output-logs=errors-only >&2
node scripts/demo.mjs "$@"
