#!/usr/bin/env bash
# What a new app of each framework gets when it adds pgscale with the command a user types (#44):
# packs the repository once (the dist/ that `npm ci` built: `npm pack --ignore-scripts`, so a
# half-edited src/ is not what gets packed), then for each framework, in its own empty app,
#
#   npm init -y
#   <the command of docs/adapters/<framework>.md, "Installing in a new app">   (pgscale → the tarball)
#   rm -rf node_modules && npm ci
#   npm ls --all                                  (no extraneous, missing or invalid package)
#   one copy of the framework's core, and the adapter's class extends that copy's base class
#
# with no overrides and no --legacy-peer-deps: the command is read from the doc, word for word, so
# the doc and the check cannot drift. `npm ci` installs exactly the lockfile `npm i` wrote: a peer
# range that does not fit the framework's own pins (llamaindex 0.12.1 pins @llamaindex/core 0.6.22:
# a peer `~0.6.23` gave ERESOLVE, or an extraneous core that `npm ci` removed) fails here.
#
# Fails, with a `check-framework-app-install: <framework>: ...` line, on an install error, any
# ERESOLVE (an error, or a warning that npm overrode a peer dependency), a problem of `npm ls`, a
# second copy of the core, or an import that fails. npm's other warnings are printed, not hidden,
# and do not fail: Mastra declares `engines: node >= 22.13`, so on Node 20 every @mastra package
# prints an EBADENGINE warning (it installs and imports; the project supports Node 20), and
# llamaindex depends on tree-sitter, whose install script npm 11 reports until the app approves or
# denies it (`allowScripts`).
#
# The frameworks install side by side (background jobs, each into its own log, printed in order at
# the end with its time): the installs mostly wait on the registry. The wall time is printed last.
#
#   bash scripts/check-framework-app-install.sh                      # langchain mastra llamaindex
#   bash scripts/check-framework-app-install.sh mastra               # one
#   bash scripts/check-framework-app-install.sh --previous langchain # the release before the latest
#
# --previous pins the framework's own package (@langchain/core, @mastra/core, llamaindex) to the
# release before its latest (by semver, pre-releases left out) and leaves the rest of the command as
# it is: pgscale's peer ranges must take both. PGSCALE_TARBALL=<path> skips the pack.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
started=$SECONDS
previous=0
frameworks=()
for arg in "$@"; do
  case "$arg" in
    --previous) previous=1 ;;
    langchain | mastra | llamaindex) frameworks+=("$arg") ;;
    *) echo "check-framework-app-install: unknown argument '$arg' (langchain, mastra, llamaindex, --previous)" >&2; exit 2 ;;
  esac
done
[ ${#frameworks[@]} -gt 0 ] || frameworks=(langchain mastra llamaindex)

# The package a release of the framework is (pinned by --previous), and the core whose copies count.
declare -A MAIN=([langchain]=@langchain/core [mastra]=@mastra/core [llamaindex]=llamaindex)
declare -A CORE=([langchain]=@langchain/core [mastra]=@mastra/core [llamaindex]=@llamaindex/core)
# The adapter's class and the core's base class it extends: one copy means the two are related.
declare -A CLASS=([langchain]=PgScaleVectorStore [mastra]=PgScaleVector [llamaindex]=PgScaleVectorStore)
declare -A BASE=(
  [langchain]="@langchain/core/vectorstores VectorStore"
  [mastra]="@mastra/core/vector MastraVector"
  [llamaindex]="@llamaindex/core/vector-store BaseVectorStore"
)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tarball="${PGSCALE_TARBALL:-}"
if [ -z "$tarball" ]; then
  [ -f "$root/dist/src/index.js" ] || { echo "check-framework-app-install: dist/ is not built (npm ci builds it)" >&2; exit 1; }
  tarball="$work/$(cd "$root" && npm pack --silent --ignore-scripts --pack-destination "$work" | tail -n1)"
fi
# What a user's npm does, without the audit and funding requests (they change nothing installed).
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

# The command of docs/adapters/<framework>.md: the first `npm i … pgscale` line of the first code
# block under "## Installing in a new app".
command_of() {
  awk '/^## Installing in a new app/ { on = 1; next } on && /^## / { exit }
       on && /^```/ { if (block) exit; block = 1; next }
       on && block && /^npm i .* pgscale$/ { print; exit }' "$root/docs/adapters/$1.md"
}

check() {
  local fw="$1" app="$work/$1" t0=$SECONDS say="check-framework-app-install: $1:"
  local command main="${MAIN[$1]}" core="${CORE[$1]}"
  command="$(command_of "$fw")"
  [ -n "$command" ] || { echo "$say docs/adapters/$fw.md has no 'npm i … pgscale' line under '## Installing in a new app'" >&2; return 1; }
  local words=()
  read -r -a words <<<"$command"
  if [ "$previous" = 1 ]; then
    local prev
    prev="$(npm view "$main" versions dist-tags.latest --json | node -e "
      const semver = require('$root/node_modules/semver')
      const v = JSON.parse(require('fs').readFileSync(0, 'utf8'))
      const versions = v.versions.filter((x) => !semver.prerelease(x) && semver.lt(x, v['dist-tags.latest']))
      console.log(semver.rsort(versions)[0])")"
    for i in "${!words[@]}"; do
      case "${words[$i]}" in "$main" | "$main@"*) words[i]="$main@$prev" ;; esac
    done
    command="${words[*]}"
  fi
  echo "$say $command"
  words[${#words[@]}-1]="$tarball" # pgscale, as the packed repository
  mkdir "$app" && cd "$app"
  npm init -y >/dev/null
  if ! "${words[@]}" >install.log 2>&1; then
    echo "$say npm i failed:" >&2; grep -i '^npm error' install.log >&2 || cat install.log >&2
    if grep -q 'code ETARGET' install.log; then
      echo "$say ETARGET: this registry has no version of a package that a dependency asks for (above) — a registry missing a release, not a peer range of pgscale" >&2
    fi
    return 1
  fi
  rm -rf node_modules
  if ! npm ci >ci.log 2>&1; then
    echo "$say npm ci failed:" >&2; grep -i '^npm error' ci.log >&2 || cat ci.log >&2; return 1
  fi
  if grep -q ERESOLVE install.log ci.log; then
    echo "$say npm reported ERESOLVE (a peer range that does not fit):" >&2; grep -h -A3 ERESOLVE install.log ci.log >&2; return 1
  fi
  if ! npm ls --all >ls.log 2>&1; then
    echo "$say npm ls --all after npm ci found problems:" >&2
    grep -iE 'extraneous|missing|invalid|npm error' ls.log | head -20 >&2; return 1
  fi
  local copies
  copies="$(npm query "#$core" | node -e "
    const nodes = JSON.parse(require('fs').readFileSync(0, 'utf8'))
    console.log(nodes.length + ' ' + nodes.map((n) => n.version + ' at ' + n.location).join(', '))")"
  if [ "${copies%% *}" != 1 ]; then
    echo "$say $core is installed ${copies%% *} times (one expected): ${copies#* }" >&2; return 1
  fi
  local base_module base_class
  read -r base_module base_class <<<"${BASE[$fw]}"
  if ! node --input-type=module -e "
    const adapter = await import('pgscale/$fw')
    const { $base_class: Base } = await import('$base_module')
    if (!(adapter.${CLASS[$fw]}.prototype instanceof Base)) {
      console.error('${CLASS[$fw]} does not extend the app\\'s $base_class ($base_module): two copies of the framework')
      process.exit(1)
    }" >import.log 2>&1; then
    echo "$say import('pgscale/$fw') failed:" >&2; cat import.log >&2; return 1
  fi
  local resolved="" pkg name
  for pkg in "${words[@]:2:${#words[@]}-3}" "$core"; do
    name="${pkg%@*}"
    [ -n "$name" ] || name="$pkg"
    case "$resolved" in *"$name "*) continue ;; esac
    resolved+="$name $(node -p "require('./node_modules/$name/package.json').version"), "
  done
  echo "$say ok in $((SECONDS - t0)) s: resolved ${resolved%, }; npm ci kept it, npm ls clean, one $core, import('pgscale/$fw') extends its $base_class"
  local warnings
  warnings="$(grep -h -i '^npm warn' install.log ci.log | sed -E 's/^npm warn ([A-Za-z-]+).*/\1/' | sort | uniq -c | awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }')"
  echo "$say npm warnings (npm i and npm ci): ${warnings:-none}"
  # One line per warning: an EBADENGINE block as its package and the Node it asks for.
  grep -h -i '^npm warn' install.log ci.log | awk -v say="$say" '
    /EBADENGINE Unsupported engine/ { engine = 1; pkg = ""; req = ""; next }
    engine && /package:/ { pkg = $0; sub(/.*package: /, "", pkg); gsub(/[\x27,]/, "", pkg); next }
    engine && /current:/ { next }
    engine && /required:/ { req = $0; sub(/.*node: /, "", req); gsub(/[\x27,} ]/, "", req); next }
    engine && /EBADENGINE }$/ { print say "   EBADENGINE " pkg " wants node " req; engine = 0; next }
    !engine { line = $0; sub(/^npm warn /, "", line); if (line !~ /^[A-Za-z-]+ *$/) print say "   " line }' | sort -u | head -30
}

pids=()
for fw in "${frameworks[@]}"; do
  (
    t0=$SECONDS
    r=0
    check "$fw" >"$work/$fw.log" 2>&1 || r=$?
    echo "$r $((SECONDS - t0))" >"$work/$fw.rc"
  ) &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
status=0
for fw in "${frameworks[@]}"; do
  read -r r s <"$work/$fw.rc"
  echo "-- $fw: exit $r, $s s"
  cat "$work/$fw.log"
  [ "$r" = 0 ] || status=1
done
label=""
[ "$previous" = 1 ] && label=" (the release before the latest)"
echo "check-framework-app-install: ${frameworks[*]}$label: $([ $status = 0 ] && echo ok || echo FAILED), wall time $((SECONDS - started)) s"
exit $status
