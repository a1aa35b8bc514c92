#!/usr/bin/env bash
# Installs PostgreSQL + pgvector >= 0.8 on Debian, idempotently.
#
#   sudo bash scripts/install-postgres.sh        # or: npm run db:install
#
# - The server and postgresql-server-dev-<major> come from the apt sources already configured.
# - pgvector: when the configured suite has no package >= 0.8 (bookworm has none), the *source*
#   package of a newer suite is fetched: that suite is added as `deb-src` only, reusing the mirror
#   URI this machine already uses, so no binary package can be upgraded from it. It is built with
#   PGXS against the installed server and installed.
# - hll and tdigest (the rollup's approximate measures): Debian's postgresql-<major>-hll and -tdigest.
# - pgbouncer (Debian's package): the test suite's pooler run (PGSCALE_TEST_PGBOUNCER=1).
# - Finally a throwaway cluster proves `CREATE EXTENSION vector` (and hll, tdigest) works.
#
# Environment: PG_MAJOR (default: the newest installed server, else the suite's default),
# PGVECTOR_SUITES (newer suites to try, default "trixie testing"), PGVECTOR_MIN (default 0.8.0).
set -euo pipefail

log() { printf '[install-postgres] %s\n' "$*"; }
die() { printf '[install-postgres] error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "run as root or install sudo"
  SUDO="sudo"
fi
command -v apt-get >/dev/null 2>&1 || die "this script supports Debian/Ubuntu (apt-get); see README for other systems"

PGVECTOR_MIN="${PGVECTOR_MIN:-0.8.0}"
PGVECTOR_SUITES="${PGVECTOR_SUITES:-trixie testing}"
export DEBIAN_FRONTEND=noninteractive

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

installed_majors() { ls /usr/lib/postgresql 2>/dev/null | sort -n; }

apt_updated=0
apt_update() { if [ "$apt_updated" -eq 0 ]; then $SUDO apt-get update -qq; apt_updated=1; fi; }

# 1. Server + server headers ---------------------------------------------------------------------
PG_MAJOR="${PG_MAJOR:-$(installed_majors | tail -n1)}"
if [ -z "$PG_MAJOR" ]; then
  apt_update
  log "installing the distribution's PostgreSQL server"
  $SUDO apt-get install -y -qq postgresql >/dev/null
  PG_MAJOR="$(installed_majors | tail -n1)"
fi
[ -n "$PG_MAJOR" ] || die "no PostgreSQL server found after install"
PG_BIN="/usr/lib/postgresql/$PG_MAJOR/bin"
need_pkgs=()
[ -x "$PG_BIN/postgres" ] || need_pkgs+=("postgresql-$PG_MAJOR")
[ -f "/usr/include/postgresql/$PG_MAJOR/server/postgres.h" ] || need_pkgs+=("postgresql-server-dev-$PG_MAJOR")
command -v make >/dev/null 2>&1 || need_pkgs+=("make")
command -v gcc >/dev/null 2>&1 || need_pkgs+=("gcc")
command -v dpkg-source >/dev/null 2>&1 || need_pkgs+=("dpkg-dev")
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  apt_update
  log "installing: ${need_pkgs[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi
PG_CONFIG="$PG_BIN/pg_config"
[ -x "$PG_CONFIG" ] || die "pg_config missing at $PG_CONFIG"
SHAREDIR="$("$PG_CONFIG" --sharedir)"
log "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') at $PG_BIN"

# 2. pgvector ----------------------------------------------------------------------------------
installed_vector_version() {
  local f="$SHAREDIR/extension/vector.control"
  [ -f "$f" ] || return 0
  sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$f"
}

current="$(installed_vector_version)"
if [ -n "$current" ] && version_ge "$current" "$PGVECTOR_MIN" \
   && [ -f "$("$PG_CONFIG" --pkglibdir)/vector.so" ]; then
  log "pgvector $current already installed"
else
  # 2a. A binary package from the configured suites, if one is new enough.
  apt_update
  candidate="$(apt-cache policy "postgresql-$PG_MAJOR-pgvector" 2>/dev/null | awk '/Candidate:/ {print $2}')"
  if [ -n "$candidate" ] && [ "$candidate" != "(none)" ] && version_ge "${candidate%%-*}" "$PGVECTOR_MIN"; then
    log "installing postgresql-$PG_MAJOR-pgvector $candidate from the configured suites"
    $SUDO apt-get install -y -qq "postgresql-$PG_MAJOR-pgvector" >/dev/null
  else
    # 2b. Build the source package of a newer suite, fetched from the mirror already configured.
    # shellcheck source=scripts/lib/debian-mirror.sh
    source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-mirror.sh"
    debian_mirror
    [ -n "$mirror" ] || die "could not read a Debian mirror URI from the configured apt sources"
    [ -n "$keyring" ] || keyring="/usr/share/keyrings/debian-archive-keyring.gpg"

    srcfile=/etc/apt/sources.list.d/pgscale-pgvector-src.sources
    workdir="$(mktemp -d)"
    trap 'rm -rf "$workdir"' EXIT
    chmod 755 "$workdir"
    built=""
    for suite in $PGVECTOR_SUITES; do
      log "looking for pgvector source in suite '$suite' (deb-src only, configured mirror)"
      printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
        "$mirror" "$suite" "$keyring" | $SUDO tee "$srcfile" >/dev/null
      if ! $SUDO apt-get update -qq -o Dir::Etc::sourcelist="$srcfile" \
             -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 2>"$workdir/update.err" \
         || grep -q '^E:' "$workdir/update.err"; then
        log "suite '$suite' unavailable: $(grep -m1 '^[EW]:' "$workdir/update.err" || true)"
        $SUDO rm -f "$srcfile"
        continue
      fi
      ver="$(apt-cache showsrc pgvector 2>/dev/null | awk '/^Version:/ {print $2}' | sort -V | tail -n1)"
      if [ -z "$ver" ] || ! version_ge "${ver%%-*}" "$PGVECTOR_MIN"; then
        log "suite '$suite' has pgvector '${ver:-none}', need >= $PGVECTOR_MIN"
        continue
      fi
      log "fetching pgvector $ver source"
      (cd "$workdir" && apt-get source -qq --download-only "pgvector=$ver" >/dev/null 2>&1) \
        || die "apt-get source pgvector=$ver failed"
      (cd "$workdir" && dpkg-source -x --skip-patches ./*.dsc src >/dev/null 2>&1 \
        || dpkg-source -x ./*.dsc src >/dev/null) || die "could not unpack the pgvector source"
      log "building pgvector ${ver%%-*} with PGXS against PostgreSQL $PG_MAJOR"
      # OPTFLAGS="" keeps the build portable (no -march=native), like Debian's own packages.
      make -s -C "$workdir/src" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >/dev/null 2>"$workdir/build.err" \
        || { cat "$workdir/build.err" >&2; die "pgvector build failed"; }
      $SUDO make -s -C "$workdir/src" PG_CONFIG="$PG_CONFIG" install >/dev/null
      built="$ver"
      break
    done
    # The deb-src entry was only needed to fetch the source: leave apt as we found it.
    $SUDO rm -f "$srcfile"
    $SUDO apt-get update -qq -o Dir::Etc::sourcelist="/dev/null" -o Dir::Etc::sourceparts=- \
      -o APT::Get::List-Cleanup=0 >/dev/null 2>&1 || true
    [ -n "$built" ] || die "no suite in '$PGVECTOR_SUITES' offered pgvector >= $PGVECTOR_MIN; set PGVECTOR_SUITES"
  fi
  current="$(installed_vector_version)"
  log "pgvector $current installed into $SHAREDIR/extension"
fi

# 2b. The sketch extensions of the rollup's approximate measures (hll, tdigest): Debian's packages ----
sketch_pkgs=()
for ext in hll tdigest; do
  [ -f "$SHAREDIR/extension/$ext.control" ] || sketch_pkgs+=("postgresql-$PG_MAJOR-$ext")
done
if [ "${#sketch_pkgs[@]}" -gt 0 ]; then
  apt_update
  log "installing: ${sketch_pkgs[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${sketch_pkgs[@]}" >/dev/null
fi

# 2c. PgBouncer: the pooler the test suite's pooler run goes through (Debian's package) ------------
if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  apt_update
  log "installing: pgbouncer"
  $SUDO apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null
fi

# 3. Prove it: CREATE EXTENSION vector in a throwaway cluster ----------------------------------
run_as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || die "the postgres OS user is missing (reinstall postgresql-$PG_MAJOR)"
    su postgres -s /bin/sh -c "$*"
  else
    sh -c "$*"
  fi
}
check_dir="$(mktemp -d)"
chmod 777 "$check_dir"
cleanup_check() {
  run_as_pg "'$PG_BIN/pg_ctl' -D '$check_dir/data' -m immediate stop" >/dev/null 2>&1 || true
  rm -rf "$check_dir"
}
trap 'cleanup_check; rm -rf "${workdir:-/nonexistent}"' EXIT
port=$(( 20000 + RANDOM % 20000 ))
run_as_pg "'$PG_BIN/initdb' -D '$check_dir/data' -U postgres -A trust >/dev/null"
run_as_pg "'$PG_BIN/pg_ctl' -D '$check_dir/data' -l '$check_dir/log' -w -o \"-p $port -k '$check_dir' -c listen_addresses=''\" start >/dev/null"
got="$(run_as_pg "'$PG_BIN/psql' -h '$check_dir' -p $port -U postgres -d postgres -Atqc \"CREATE EXTENSION vector; SELECT extversion FROM pg_extension WHERE extname = 'vector'; SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector;\"")"
log "CREATE EXTENSION vector works: version $(echo "$got" | sed -n 1p), '[1,2,3]' <-> '[1,2,4]' = $(echo "$got" | sed -n 2p)"
sketch="$(run_as_pg "'$PG_BIN/psql' -h '$check_dir' -p $port -U postgres -d postgres -Atqc \"CREATE EXTENSION hll; CREATE EXTENSION tdigest; SELECT round(hll_cardinality(hll_add_agg(hll_hash_integer(g)))) FROM generate_series(1, 1000) g; SELECT round(tdigest_percentile(g::float8, 100, 0.5)) FROM generate_series(1, 1000) g;\"")"
log "CREATE EXTENSION hll, tdigest work: ~$(echo "$sketch" | sed -n 1p) distinct of 1000, median ~$(echo "$sketch" | sed -n 2p)"
