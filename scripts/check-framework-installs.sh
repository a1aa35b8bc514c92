#!/usr/bin/env bash
# What a new app of each framework gets when it adds pgscale with the plain command a user types:
# packs pgscale, then per framework in an empty app `npm install <framework packages> pg <pgscale
# tarball>` (no overrides, no --legacy-peer-deps), `npm ci` (which removes whatever the lockfile
# does not hold: a peer range that does not fit the framework's own pins fails here), then imports
# the adapter and subclasses nothing more: `import('pgscale/<framework>')` must load against the
# framework the app installed, one copy of its core. Usage: check-framework-installs.sh
# [langchain|llamaindex|mastra ...] (default: all three); PGSCALE_TARBALL=<path> skips the pack.
# Mastra declares Node >= 22.13: on an older Node its install prints engine warnings (counted, not
# failed) and the import is still checked.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tarball="${PGSCALE_TARBALL:-}"
if [ -z "$tarball" ]; then
  tarball="$work/$(cd "$root" && npm pack --silent --pack-destination "$work" | tail -n1)"
fi

declare -A PACKAGES=(
  [langchain]="@langchain/core"
  [llamaindex]="llamaindex"
  [mastra]="@mastra/core"
)
declare -A CORE=(
  [langchain]="@langchain/core"
  [llamaindex]="@llamaindex/core"
  [mastra]="@mastra/core"
)

check() {
  local framework="$1" app="$work/$1" started=$SECONDS
  mkdir "$app" && cd "$app"
  npm init -y >/dev/null
  npm pkg set type=module >/dev/null
  # shellcheck disable=SC2086 # the package list is words
  if ! npm install --no-audit --no-fund ${PACKAGES[$framework]} pg "$tarball" >install.log 2>&1; then
    echo "[framework-installs] $framework: npm install failed:" >&2; cat install.log >&2; return 1
  fi
  if ! npm ci --no-audit --no-fund >ci.log 2>&1; then
    echo "[framework-installs] $framework: npm ci failed:" >&2; cat ci.log >&2; return 1
  fi
  local copies
  copies="$( (npm ls --all --parseable "${CORE[$framework]}" 2>/dev/null || true) | grep -c "/node_modules/${CORE[$framework]}$" || true)"
  if [ "$copies" != 1 ]; then
    echo "[framework-installs] $framework: ${CORE[$framework]} installed $copies times (one expected)" >&2; return 1
  fi
  node --input-type=module -e "const m = await import('pgscale/$framework'); if (Object.keys(m).length === 0) process.exit(1)" 2>import.log ||
    { echo "[framework-installs] $framework: import('pgscale/$framework') failed:" >&2; cat import.log >&2; return 1; }
  local version warnings
  version="$(node -p "require('./node_modules/${CORE[$framework]}/package.json').version")"
  warnings="$(grep -ci '^npm warn' install.log ci.log | awk -F: '{ s += $2 } END { print s }')"
  echo "[framework-installs] $framework: npm i ${PACKAGES[$framework]} pg pgscale, npm ci, import 'pgscale/$framework': ok (${CORE[$framework]} $version, one copy; $warnings npm warnings; $((SECONDS - started)) s)"
  grep -i '^npm warn' install.log | sed "s/^/[framework-installs] $framework: /" | sort -u | head -5 || true
}

frameworks=("$@")
[ ${#frameworks[@]} -gt 0 ] || frameworks=(langchain llamaindex mastra)
status=0
for framework in "${frameworks[@]}"; do check "$framework" || status=1; done
exit $status
