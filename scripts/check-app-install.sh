#!/usr/bin/env bash
# What an app gets from pgscale: packs the package, installs the tarball into an empty app with
# kysely and pg, and checks that neither Testcontainers nor PGlite came along (optional peer
# dependencies), that npm printed no warning (no install script to approve: pgscale has none an
# app would run, `prepack` builds dist/), and that the embedded provider then fails with a typed
# error naming its package. Prints the app's node_modules: packages and MB.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tarball="$(cd "$root" && npm pack --silent --pack-destination "$work" | tail -n1)"
mkdir "$work/app"
cd "$work/app"
npm init -y >/dev/null
# npm's warnings are read, not hidden: any `npm warn` line (an install script to approve, a
# deprecation, an engine mismatch) fails the check.
install_log="$work/install.log"
npm install --no-audit --no-fund kysely pg "$work/$tarball" >"$install_log" 2>&1 || { cat "$install_log" >&2; exit 1; }
if grep -qi '^npm warn' "$install_log"; then
  echo "[app-install] error: installing pgscale into an app printed warnings:" >&2
  grep -i '^npm warn' "$install_log" >&2
  exit 1
fi
for heavy in testcontainers @testcontainers/postgresql @electric-sql/pglite; do
  if [ -d "node_modules/$heavy" ]; then echo "[app-install] error: $heavy was installed into an app that did not ask for it" >&2; exit 1; fi
done
packages="$( (npm ls --all --parseable 2>/dev/null || true) | tail -n +2 | sort -u | wc -l)"
megabytes="$(du -sm node_modules | cut -f1)"
cat > check.mjs <<'JS'
import { provision, DatabaseNotConfiguredError, ProviderUnavailableError } from 'pgscale'
// An app without DATABASE_URL that names no provider gets a typed refusal, not a throwaway database.
delete process.env.DATABASE_URL
const refused = await provision().then(() => undefined, (err) => err)
if (!(refused instanceof DatabaseNotConfiguredError) || !refused.message.includes('set DATABASE_URL')) {
  console.error('[app-install] error: provision() without DATABASE_URL did not refuse', refused); process.exit(1)
}
console.log(`[app-install] provision() without DATABASE_URL: ${refused.name} (${refused.code}): ${refused.message}`)
try {
  await provision({ provider: 'embedded' })
  console.error('[app-install] error: the embedded provider started without @electric-sql/pglite'); process.exit(1)
} catch (err) {
  if (!(err instanceof ProviderUnavailableError) || !/@electric-sql\/pglite/.test(err.message)) { console.error('[app-install] error: unexpected', err); process.exit(1) }
  console.log(`[app-install] provision({ provider: 'embedded' }) without PGlite: ${err.name} (${err.code}): ${err.message}`)
}
JS
node check.mjs
echo "[app-install] an app with kysely, pg and pgscale: ${packages} packages, ${megabytes} MB of node_modules; no Testcontainers, no PGlite"
