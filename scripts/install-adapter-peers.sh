#!/usr/bin/env bash
# Installs the framework apps of examples/ (langchain, mastra, llamaindex), each in its own prefix
# with its lockfile: the frameworks the adapters are tested against, their own pgvector stores for
# the side-by-side bench, and pgscale itself as an app gets it (the packed repository: run
# `npm ci` first, which builds dist/). Kept out of the main `npm ci`: Mastra declares Node >= 22.13,
# and @llamaindex/core is deprecated on the registry; both print warnings that belong here.
#
#   npm run adapters:install            # all three
#   npm run adapters:install -- mastra  # one
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
frameworks=("${@:-langchain mastra llamaindex}")
for fw in ${frameworks[@]}; do
  echo "[adapters] examples/$fw"
  (cd "$root/examples/$fw" && npm ci --install-links --no-audit --no-fund --loglevel=error)
done
