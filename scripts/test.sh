#!/usr/bin/env bash
# The whole suite, as CI runs it: lint and format check, build, package lint (publint), every
# package's typechecked tests; then one closing line "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1 MCPSANDBOX_TEST_JSON=1
# Pins written by tests that install with `npx -y` go to a lock of their own, not the user's.
MCP_SANDBOX_PIN_LOCK="$(mktemp -d)/npx-lock.json"
export MCP_SANDBOX_PIN_LOCK
PNPM=(npx --yes pnpm@12.4.2)
[ -d node_modules ] || "${PNPM[@]}" install --frozen-lockfile || exit 1
rm -f packages/*/test-results.json apps/*/test-results.json

status=0
"${PNPM[@]}" exec biome ci . || { echo "lint: biome found problems (run: npx --yes pnpm@12.4.2 format)" >&2; status=1; }
"${PNPM[@]}" exec turbo run build publint --output-logs=errors-only || status=1
# One package at a time: the sandboxes' tests start real processes and timers on a small machine.
"${PNPM[@]}" exec turbo run test --concurrency=1 --continue || status=1
node scripts/test-summary.mjs || status=1
exit "$status"
