#!/usr/bin/env bash
# Build (once) a minimal Debian chroot holding Valkey 9, whose DELIFEQ and
# SET ... IFEQ commands the tests need, and Redis 8.0. The host's Debian ships
# Redis 7 and Valkey 9 is only in unstable, so we debootstrap trixie, pull
# valkey-server from sid and take trixie's redis-server (8.0) inside the
# chroot instead of mixing suites on the host.
#
# Usage: scripts/valkey-chroot.sh [DIR]
#   DIR defaults to $REDLOCK_VALKEY_CHROOT or /var/cache/redlock/valkey-chroot.
# Does nothing when DIR already has a working Valkey 9 and Redis 8.0; adds
# Redis 8.0 in place to a chroot that has Valkey 9 alone (servers already
# running from it keep running).
set -euo pipefail

dir=${1:-${REDLOCK_VALKEY_CHROOT:-/var/cache/redlock/valkey-chroot}}
export DEBIAN_FRONTEND=noninteractive
# Off-line sid snapshots and mirrors can carry expired Release files.
apt_opts=(-o Acquire::Check-Valid-Until=false)

die() { echo "valkey-chroot: ERROR: $*" >&2; exit 1; }

valkey_ok() { [[ $(chroot "$1" valkey-server --version 2>/dev/null) == *" v=9."* ]]; }
redis8_ok() { [[ $(chroot "$1" redis-server --version 2>/dev/null) == *" v=8.0."* ]]; }
ready() { valkey_ok "$1" && redis8_ok "$1"; }

# Redis 8.0 from trixie (-t: its dependencies too), not sid's: sid follows
# Redis to later versions (8.4 adds DELEX, another release path than the Lua
# one that runs on 8.0) and its redis-server needs sid's libc. Same
# valkey-tools postinst failure as below when it reconfigures valkey-tools.
install_redis8() { # ROOT LOG
  chroot "$1" apt-get "${apt_opts[@]}" install -y -q --no-install-recommends -t trixie redis-server >>"$2" 2>&1 ||
    echo "valkey-chroot: apt-get install redis-server reported an error (expected: valkey-tools postinst); checking the binary" >&2
  redis8_ok "$1" || {
    tail -n 30 "$2" >&2
    die "redis-server 8.0 is not runnable in the chroot (got: $(chroot "$1" redis-server --version 2>&1 || true)); full log: $2"
  }
}

# The same Debian mirror the host uses (one-line or deb822 format).
host_mirror() {
  local uri
  uri=$(grep -hsE '^\s*deb\s' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
    grep -v -- '-security' | grep -oE '[a-z]+://[^ ]+' | head -n1 || true)
  [[ -n $uri ]] || uri=$(grep -hsiE '^\s*URIs:' /etc/apt/sources.list.d/*.sources |
    grep -v -- '-security' | awk '{print $2; exit}' || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

[[ $(id -u) == 0 ]] || die "must run as root (debootstrap and chroot need it)"
ready "$dir" && exit 0

mkdir -p "$(dirname "$dir")"
# Several test runs may start at once; only one of them builds.
exec 9>"$dir.lock"
flock 9
ready "$dir" && exit 0

if valkey_ok "$dir"; then
  echo "valkey-chroot: adding Redis 8.0 to $dir"
  log="$dir.redis8.log"
  chroot "$dir" apt-get "${apt_opts[@]}" update -q >"$log" 2>&1 ||
    { tail -n 30 "$log" >&2; die "apt-get update in the chroot failed"; }
  install_redis8 "$dir" "$log"
  chroot "$dir" apt-get clean
  rm -f "$log"
  echo "valkey-chroot: ready: $(chroot "$dir" redis-server --version)"
  exit 0
fi

if ! command -v debootstrap >/dev/null; then
  apt-get update -q && apt-get install -y -q debootstrap
fi

# Build next to the target and rename at the end, so an interrupted build never
# looks like a finished cache. debootstrap mounts /proc and /sys inside the
# target while it runs; unmount anything it leaves behind before deleting.
tmp="$dir.partial"
cleanup() {
  awk -v d="$tmp/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT # so Ctrl-C / kill still run the cleanup
trap 'exit 143' TERM HUP
cleanup

mirror=$(host_mirror)
echo "valkey-chroot: building $dir from $mirror (one-time, about a minute)"
debootstrap --variant=minbase trixie "$tmp" "$mirror" >"$tmp.log" 2>&1 ||
  { tail -n 30 "$tmp.log" >&2; die "debootstrap failed (full log: $tmp.log)"; }

# Same line debootstrap wrote, with the suite switched to sid.
sed -n 's/^\(deb .*\) trixie /\1 sid /p' "$tmp/etc/apt/sources.list" >"$tmp/etc/apt/sources.list.d/sid.list"
[[ -s $tmp/etc/apt/sources.list.d/sid.list ]] || die "could not derive a sid line from $tmp/etc/apt/sources.list"
# Keep package scripts from trying to start services inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
chmod +x "$tmp/usr/sbin/policy-rc.d"

chroot "$tmp" apt-get "${apt_opts[@]}" update -q >>"$tmp.log" 2>&1 ||
  { tail -n 30 "$tmp.log" >&2; die "apt-get update in the chroot failed"; }
# valkey-tools' postinst fails in a bare chroot (systemd-tmpfiles wants /proc,
# the systemd catalog is missing); the binaries are unpacked by then, so ignore
# the status and check the binary below instead of mounting /proc.
chroot "$tmp" apt-get "${apt_opts[@]}" install -y -q --no-install-recommends -t sid valkey-server >>"$tmp.log" 2>&1 ||
  echo "valkey-chroot: apt-get install reported an error (expected: valkey-tools postinst); checking the binary" >&2

if ! valkey_ok "$tmp"; then
  tail -n 30 "$tmp.log" >&2
  die "valkey-server 9.x is not runnable in the chroot (got: $(chroot "$tmp" valkey-server --version 2>&1 || true)); full log: $tmp.log"
fi
install_redis8 "$tmp" "$tmp.log"
chroot "$tmp" apt-get clean
rm -rf "$dir"
mv "$tmp" "$dir"
rm -f "$tmp.log"
echo "valkey-chroot: ready: $(chroot "$dir" valkey-server --version); $(chroot "$dir" redis-server --version)"
