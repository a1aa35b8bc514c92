#!/usr/bin/env bash
# Makes the `container` provider (Testcontainers) work on a Debian machine without Docker,
# idempotently:
#
#   sudo bash scripts/container-engine.sh        # or: npm run container:setup
#
# - A machine whose Docker engine answers keeps Docker (and pgvector/pgvector:pg17): nothing to do.
# - Otherwise: podman + runc from Debian's packages (crun, podman's default runtime, fails here on
#   setrlimit), runc set as podman's runtime, and podman's Docker-compatible API served on
#   unix:///run/pgscale-podman/podman.sock, where the container provider looks for it.
# - No image registry can be reached, so the image pgscale/postgres-pgvector:15 is built locally
#   from Debian's packages: debootstrap (minbase, the mirror this machine's apt sources use),
#   postgresql-15 with its hll and tdigest packages installed in it, pgvector copied from this machine's install (same Debian
#   suite and PostgreSQL major: run scripts/install-postgres.sh first), and an entrypoint that
#   honours POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB like the official image.
#
# Environment: PGSCALE_PODMAN_SOCKET (default /run/pgscale-podman/podman.sock),
# PGSCALE_CONTAINER_IMAGE (default pgscale/postgres-pgvector:15), REBUILD_IMAGE=1 to rebuild.
set -euo pipefail

log() { printf '[container-engine] %s\n' "$*"; }
die() { printf '[container-engine] error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (it installs packages, builds a root filesystem and serves a socket)"
command -v apt-get >/dev/null 2>&1 || die "this script supports Debian (apt-get)"
export DEBIAN_FRONTEND=noninteractive

SOCKET="${PGSCALE_PODMAN_SOCKET:-/run/pgscale-podman/podman.sock}"
IMAGE="${PGSCALE_CONTAINER_IMAGE:-pgscale/postgres-pgvector:15}"
PG_MAJOR=15
SUITE="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 && ! docker info 2>/dev/null | grep -qi podman; then
  log "a Docker engine answers: the container provider uses it (and pgvector/pgvector:pg17); nothing to do"
  exit 0
fi

# 1. podman + runc --------------------------------------------------------------------------------
missing=()
for cmd in podman runc debootstrap; do command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd"); done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing: ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends podman runc debootstrap uidmap slirp4netns >/dev/null
fi
mkdir -p /etc/containers/containers.conf.d
cat > /etc/containers/containers.conf.d/50-pgscale.conf <<'CONF'
# pgscale (scripts/container-engine.sh): crun fails on setrlimit on these machines; runc works.
[containers]
default_ulimits = []

[engine]
runtime = "runc"
CONF
runtime="$(podman info --format '{{.Host.OCIRuntime.Name}}' 2>/dev/null || true)"
[ "$runtime" = "runc" ] || die "podman's runtime is '${runtime:-unknown}', not runc, after writing /etc/containers/containers.conf.d/50-pgscale.conf"
log "podman $(podman --version | awk '{print $3}') with runc"

# 2. The Docker-compatible API on a unix socket ---------------------------------------------------
api_answers() { curl -fsS --max-time 2 --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1; }
command -v curl >/dev/null 2>&1 || { apt-get install -y -qq --no-install-recommends curl >/dev/null; }
if ! api_answers; then
  mkdir -p "$(dirname "$SOCKET")"
  rm -f "$SOCKET"
  # From /, not the caller's folder (a CI checkout may be deleted while the service lives on), and
  # with no descriptor of ours but the log: an inherited pipe would keep a caller's `| tail` waiting.
  (
    cd /
    for fd in /proc/$BASHPID/fd/*; do
      fd="${fd##*/}"
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
    done
    setsid nohup podman system service --time=0 "unix://$SOCKET" >/var/log/pgscale-podman.log 2>&1 < /dev/null &
  )
  for _ in $(seq 1 50); do api_answers && break; sleep 0.2; done
  api_answers || die "podman's API did not answer on $SOCKET (see /var/log/pgscale-podman.log)"
fi
log "API on unix://$SOCKET"

# 3. The image --------------------------------------------------------------------------------------
if podman image exists "$IMAGE" && [ "${REBUILD_IMAGE:-0}" != "1" ]; then
  log "image $IMAGE already built"
  exit 0
fi
PG_CONFIG="/usr/lib/postgresql/$PG_MAJOR/bin/pg_config"
[ -x "$PG_CONFIG" ] && [ -f "$("$PG_CONFIG" --pkglibdir)/vector.so" ] \
  || die "pgvector for PostgreSQL $PG_MAJOR is not installed here: run scripts/install-postgres.sh first"
# shellcheck source=scripts/lib/debian-mirror.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-mirror.sh"
debian_mirror
[ -n "$mirror" ] || die "could not read a Debian mirror URI from the configured apt sources"

rootfs="$(mktemp -d /var/tmp/pgscale-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT
started=$(date +%s)
log "debootstrap --variant=minbase $SUITE (the configured mirror)"
debootstrap --variant=minbase "$SUITE" "$rootfs" "$mirror" >/var/log/pgscale-debootstrap.log 2>&1 \
  || die "debootstrap failed (see /var/log/pgscale-debootstrap.log)"
# No cluster and no service start while installing into the root filesystem.
mkdir -p "$rootfs/etc/postgresql-common/createcluster.d"
echo 'create_main_cluster = false' > "$rootfs/etc/postgresql-common/createcluster.d/pgscale.conf"
printf '#!/bin/sh\nexit 101\n' > "$rootfs/usr/sbin/policy-rc.d"
chmod +x "$rootfs/usr/sbin/policy-rc.d"
log "installing postgresql-$PG_MAJOR (and its hll, tdigest) in it"
chroot "$rootfs" apt-get install -y -qq --no-install-recommends "postgresql-$PG_MAJOR" "postgresql-$PG_MAJOR-hll" "postgresql-$PG_MAJOR-tdigest" >/var/log/pgscale-chroot-apt.log 2>&1 \
  || die "apt-get in the root filesystem failed (see /var/log/pgscale-chroot-apt.log)"
log "adding pgvector $(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$("$PG_CONFIG" --sharedir)/extension/vector.control") from this machine"
cp "$("$PG_CONFIG" --pkglibdir)/vector.so" "$rootfs$("$PG_CONFIG" --pkglibdir)/"
cp "$("$PG_CONFIG" --sharedir)"/extension/vector* "$rootfs$("$PG_CONFIG" --sharedir)/extension/"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*

cat > "$rootfs/usr/local/bin/pgscale-entrypoint" <<'ENTRY'
#!/bin/sh
# Like the official postgres image: POSTGRES_USER (default postgres), POSTGRES_PASSWORD (required),
# POSTGRES_DB (default: the user); a command of `postgres -c name=value ...` passes its settings on.
set -eu
export PATH="/usr/lib/postgresql/15/bin:$PATH"
PGDATA=/var/lib/postgresql/data
USER_NAME="${POSTGRES_USER:-postgres}"
DB_NAME="${POSTGRES_DB:-$USER_NAME}"
[ -n "${POSTGRES_PASSWORD:-}" ] || { echo "POSTGRES_PASSWORD is required" >&2; exit 1; }
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pgscale-pw
  chown postgres /tmp/pgscale-pw
  runuser -u postgres -- initdb -D "$PGDATA" -U "$USER_NAME" --pwfile=/tmp/pgscale-pw -A scram-sha-256 -E UTF8 --no-locale >/dev/null
  rm -f /tmp/pgscale-pw
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  if [ "$DB_NAME" != "postgres" ]; then
    echo "CREATE DATABASE \"$DB_NAME\" OWNER \"$USER_NAME\"" | runuser -u postgres -- postgres --single -D "$PGDATA" postgres >/dev/null
  fi
fi
[ "${1:-}" = "postgres" ] && shift
exec runuser -u postgres -- postgres -D "$PGDATA" -c listen_addresses='*' "$@"
ENTRY
chmod +x "$rootfs/usr/local/bin/pgscale-entrypoint"

log "importing the root filesystem as $IMAGE"
tar -C "$rootfs" -c . | podman import \
  --change 'ENTRYPOINT ["/usr/local/bin/pgscale-entrypoint"]' \
  --change 'CMD ["postgres"]' \
  --change 'EXPOSE 5432' \
  --change 'STOPSIGNAL SIGINT' \
  - "$IMAGE" >/dev/null
log "built $IMAGE in $(( $(date +%s) - started )) s ($(podman image inspect "$IMAGE" --format '{{.Size}}' | awk '{printf "%d MB", $1/1048576}'))"
