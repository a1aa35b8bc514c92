# Sourced by the install scripts: reads the Debian mirror URI (and its keyring) that this machine's
# apt sources already use, so nothing names a host of its own.
#
#   source scripts/lib/debian-mirror.sh; debian_mirror   # sets $mirror and $keyring (may be empty)
debian_mirror() {
  mirror=""
  keyring=""
  if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
    # deb822: first URIs line of a stanza whose Suites name the base suite (not -security).
    read -r mirror keyring < <(awk '
      /^URIs:/ {u=$2} /^Signed-By:/ {k=$2}
      /^Suites:/ { if ($0 !~ /security/) s=1 }
      /^$/ { if (s && u!="") { print u, k; exit } s=0; u=""; k="" }
      END { if (s && u!="") print u, k }' /etc/apt/sources.list.d/*.sources) || true
  fi
  if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
    mirror="$(awk '$1=="deb" && $0 !~ /security/ { for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list)"
  fi
}
