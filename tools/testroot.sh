#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tools/testroot.sh SUITE: a Debian root of another suite for the tests that trace
# runtimes and consumers as other distros ship them (a container's layout, another
# glibc), built once with debootstrap and cached in $OUT/roots/SUITE. Prints its path.
# Never touches the host's apt sources. Needs root, debootstrap and the network the
# first time (~2-4 min a suite).
#
#   forky:  python3.14, python3.15, aiohttp, node over libnode.so, prometheus 3,
#           opentelemetry-proto
#   trixie: python3.13, aiohttp
#   bookworm: nothing beyond minbase (a fresh machine for the .deb)
#
# The package list is part of the cache key: a changed list builds the root afresh.
# DEBIAN_MIRROR: default http://deb.debian.org/debian
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$REPO/build}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${1:-}

case "$suite" in
forky)
	pkgs=(python3.14 python3.15 python3-aiohttp nodejs prometheus opentelemetry-proto
		ca-certificates procps) ;;
trixie)
	pkgs=(python3.13 python3-aiohttp ca-certificates procps) ;;
bookworm)
	# a fresh machine of the release loopwatch is built on: `make deb`'s package
	# installs there with its Depends (tests/e2e/test_deb.py), nothing more in it
	pkgs=(ca-certificates) ;;
*)
	echo "usage: tools/testroot.sh forky|trixie|bookworm" >&2
	exit 2 ;;
esac

say() { echo "testroot: $*" >&2; }
die() { say "$*"; exit 1; }

root=$OUT/roots/$suite
stamp="$suite ${pkgs[*]}"
if [ -f "$root/.lw-root" ] && [ "$(cat "$root/.lw-root")" = "$stamp" ]; then
	echo "$root"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || die "needs debootstrap (tools/deps.sh test)"
mkdir -p "$OUT/roots"

# Tests running at once wait for the one that builds it.
exec 9>"$OUT/roots/.$suite.lock"
flock 9
if [ -f "$root/.lw-root" ] && [ "$(cat "$root/.lw-root")" = "$stamp" ]; then
	echo "$root"
	exit 0
fi

tmp=$root.tmp
mounted=()
cleanup() {
	local m
	for m in "${mounted[@]}"; do
		umount -l "$m" || true
	done
}
trap cleanup EXIT

say "building the $suite root in $root (a few minutes, once)"
rm -rf --one-file-system "$tmp"
# sid's script: forky has none of its own yet
debootstrap --variant=minbase "$suite" "$tmp" "$MIRROR" \
	/usr/share/debootstrap/scripts/sid >"$OUT/roots/$suite.debootstrap.log" 2>&1 ||
	die "debootstrap failed: $OUT/roots/$suite.debootstrap.log"
cp /etc/resolv.conf "$tmp/etc/resolv.conf"
for d in proc sys dev; do
	mount --bind "/$d" "$tmp/$d"
	mounted+=("$tmp/$d")
done
apt=(apt-get -o Acquire::Check-Valid-Until=false -o Dpkg::Use-Pty=0)
chroot "$tmp" "${apt[@]}" update -qq >"$OUT/roots/$suite.apt.log" 2>&1 ||
	die "apt-get update in the root failed: $OUT/roots/$suite.apt.log"
DEBIAN_FRONTEND=noninteractive chroot "$tmp" "${apt[@]}" install -y -qq \
	--no-install-recommends "${pkgs[@]}" >>"$OUT/roots/$suite.apt.log" 2>&1 ||
	die "apt-get install in the root failed: $OUT/roots/$suite.apt.log"
chroot "$tmp" "${apt[@]}" clean
cleanup
mounted=()
echo "$stamp" >"$tmp/.lw-root"
rm -rf --one-file-system "$root"
mv "$tmp" "$root"
echo "$root"
