#!/usr/bin/env bash
# Nothing left behind: the test suite's and the benches' temporary folders in the OS temp
# directory (pgscale-<name>-XXXXXX, as mkdtemp makes them), and — given a database — the benches'
# schemas and records of pgscale_object_version whose table (or a rollup's source) is gone.
#
#   scripts/check-no-leftovers.sh [--since FILE] [--pg URL]
#
# --since FILE  only folders newer than FILE (touch it before `npm test`: other runs' folders on a
#               shared machine, and ones from before, are not this run's)
# --pg URL      also check this database (psql must be on PATH)
# Exit 0 when nothing is left, 1 listing what is.
set -euo pipefail
since=""
url=""
while [ $# -gt 0 ]; do
  case "$1" in
    --since) since="$2"; shift 2 ;;
    --pg) url="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-no-leftovers: unknown argument $1" >&2; exit 2 ;;
  esac
done
tmp="${TMPDIR:-/tmp}"
tmp="${tmp%/}"
newer=()
[ -n "$since" ] && newer=(-newer "$since")
# The mkdtemp suffix is 6 characters. A folder with a postmaster.pid (a local cluster or one of its
# standbys, pgscale-local-*) is a server still running — another run's, on a shared machine — and
# is not counted.
mapfile -t folders < <(find "$tmp" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended \
  -regex "$tmp/pgscale-[a-z0-9-]+-[A-Za-z0-9]{6}" "${newer[@]}" 2>/dev/null | sort)
left=()
for folder in "${folders[@]}"; do
  [ -n "$(find "$folder" -maxdepth 4 -name postmaster.pid -print -quit 2>/dev/null)" ] && continue
  left+=("$folder")
done
status=0
if [ ${#left[@]} -gt 0 ]; then
  echo "check-no-leftovers: ${#left[@]} temporary folder(s) left in $tmp:" >&2
  printf '  %s\n' "${left[@]}" >&2
  status=1
fi
if [ -n "$url" ]; then
  q() { psql "$url" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
  rows="$(q "select 'schema ' || nspname from pg_namespace where nspname in ('pgscale_rag_bench', 'pgscale_bench', 'pgscale_rag_load', 'pgscale_quantization', 'pgscale_filters', 'pgscale_planning')")"
  if [ "$(q "select to_regclass('pgscale_object_version') is not null")" = t ]; then
    rows+="$(q "select E'\\nrecord ' || object from pgscale_object_version
      where split_part(object, ':', 1) in ('store', 'rollup')
        and (to_regclass(format('%I.%I', split_part(split_part(object, ':', 2), '.', 1), split_part(split_part(object, ':', 2), '.', 2))) is null
          or (config ? 'source' and case when strpos(config->>'source', '.') > 0 then to_regclass(config->>'source') is null
            else not exists (select from pg_class c where c.relname = config->>'source' and c.relkind in ('r', 'p', 'f', 'v', 'm')) end))")"
  fi
  rows="$(printf '%s\n' "$rows" | sed '/^$/d')"
  if [ -n "$rows" ]; then
    echo "check-no-leftovers: left in the database:" >&2
    printf '%s\n' "$rows" | sed 's/^/  /' >&2
    status=1
  fi
fi
[ $status -eq 0 ] && echo "check-no-leftovers: nothing left${since:+ since $since} in $tmp${url:+ and the database}"
exit $status
