#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make test-kernels: loopwatch's core end-to-end cases on Debian's own kernels, each
# booted with virtme-ng under TCG (nested KVM fails on this kind of host) over a Debian
# forky root built once and cached in $OUT/kernels/forky. Prints a table: per kernel,
# the largest task storage value it creates (tests/kernels/storage_limit.c) and each
# case's result. Needs root and debootstrap (tools/deps.sh kernels); ~2-4 min a kernel.
#
# KERNELS: which suites' kernels (default "bookworm trixie forky": 6.1, 6.12, 7.x;
#   "bullseye" adds 5.10, older than loopwatch's minimum: there the test is that it
#   refuses to start with one clear line)
# KERNEL_CASES: which of tests/kernels/core.py's cases (default "loop stalls tick hz prom hooks"), or
#   "bench" for tests/kernels/bench.py (make bench-kernels)
# KERNEL_ENV: variables for loopwatch in the guests, e.g. LOOPWATCH_TEST_ABSENT=fentry
#   (test-only: the tracepoint hooks on a kernel that has fentry)
# KERNEL_TIMEOUT: seconds a guest may take, boot and cases (default 1200)
# DEBIAN_MIRROR: default http://deb.debian.org/debian
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$REPO/build}
ROOT=$OUT/kernels/forky
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
KERNELS=${KERNELS:-bookworm trixie forky}
# loops tracked against their own busy times; stalls with the injecting function in
# their stacks; the Prometheus file against the workload's truth (core.py)
KERNEL_CASES=${KERNEL_CASES:-loop stalls tick hz prom hooks}
KERNEL_ENV=${KERNEL_ENV:-}
# loopwatch's minimum kernel (userspace/kernel/features.h): an older one must refuse
MIN_KERNEL=$(sed -n 's/^#define FEATURES_MIN_KERNEL "\(.*\)"/\1/p' \
	"$REPO/userspace/kernel/features.h")
# what the guest runs loopwatch, its workloads and the tests with (from forky)
ROOT_PKGS=(virtme-ng qemu-system-x86 linux-image-amd64 busybox-static kmod ca-certificates
	libbpf1 libdw1t64 libelf1t64 libncursesw6 libstdc++6 zlib1g python3 procps)
APT=(apt-get -o Acquire::Check-Valid-Until=false -o Dpkg::Use-Pty=0)

say() { echo "test-kernels: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (chroot, mounts, BPF in the guests)"
command -v debootstrap >/dev/null || die "needs debootstrap (tools/deps.sh kernels)"
[ -x "$OUT/loopwatch" ] || die "no $OUT/loopwatch: make first"

# /proc, /sys and /dev inside the root while it is used; always taken down again, so
# that removing $OUT never reaches the host's
mounted=()
root__mount() {
	local r=$1 d
	for d in proc sys dev; do
		mountpoint -q "$r/$d" && continue
		mount --bind "/$d" "$r/$d"
		mounted+=("$r/$d")
	done
}
root__umount() {
	local m
	for m in "${mounted[@]}"; do
		umount -l "$m" || true
	done
	mounted=()
}
trap root__umount EXIT

# The forky root, made once: debootstrap (sid's script: forky has none of its own yet),
# then virtme-ng, QEMU, forky's kernel and what loopwatch and the tests run with.
root__make() {
	local tmp=$ROOT.tmp
	[ -e "$ROOT/.lwk-root" ] && return 0
	say "building the forky root in $ROOT (a few minutes, once)"
	rm -rf --one-file-system "$tmp"
	mkdir -p "$(dirname "$ROOT")"
	debootstrap --variant=minbase forky "$tmp" "$MIRROR" \
		/usr/share/debootstrap/scripts/sid >"$OUT/kernels/debootstrap.log" 2>&1 ||
		die "debootstrap failed: $OUT/kernels/debootstrap.log"
	cp /etc/resolv.conf "$tmp/etc/resolv.conf"
	root__mount "$tmp"
	chroot "$tmp" "${APT[@]}" update -qq
	DEBIAN_FRONTEND=noninteractive chroot "$tmp" "${APT[@]}" install -y -qq \
		--no-install-recommends "${ROOT_PKGS[@]}" >"$OUT/kernels/apt.log" 2>&1 ||
		die "apt-get install in the root failed: $OUT/kernels/apt.log"
	root__umount
	touch "$tmp/.lwk-root"
	rm -rf --one-file-system "$ROOT"
	mv "$tmp" "$ROOT"
}

# The kernel of a suite's linux-image-amd64 into the root's /boot and /usr/lib/modules
# (not /lib: the root's /lib is a symlink dpkg -x would replace), fetched by apt inside
# the root with a list of its own, so the root's packages stay forky's. Echoes its version.
kernel__fetch() {
	local suite=$1 dir=/var/tmp/lwk-$suite pkg ver mods
	# an empty dpkg status: the root's own (forky's) kernel is not this suite's candidate
	local apt=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$dir/lists" -o "Dir::State::status=$dir/status"
		-o "Dir::Cache=$dir/cache")
	if [ "$suite" = forky ]; then
		ver=$(chroot "$ROOT" dpkg-query -W -f '${Depends}' linux-image-amd64 |
			grep -o 'linux-image-[0-9][^ ,]*' | sed 's/^linux-image-//')
		[ -n "$ver" ] && [ -d "$ROOT/usr/lib/modules/$ver" ] || die "no forky kernel in the root"
		echo "$ver"
		return
	fi
	if [ -s "$ROOT$dir/version" ]; then
		cat "$ROOT$dir/version"
		return
	fi
	mkdir -p "$ROOT$dir/lists/partial" "$ROOT$dir/cache/archives/partial"
	: >"$ROOT$dir/status"
	echo "deb $MIRROR $suite main" >"$ROOT$dir/sources.list"
	chroot "$ROOT" "${APT[@]}" "${apt[@]}" update -qq >&2 || die "apt-get update ($suite) failed"
	pkg=$(chroot "$ROOT" apt-cache "${apt[@]}" depends linux-image-amd64 |
		awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
	[ -n "$pkg" ] || die "no kernel package in $suite"
	chroot "$ROOT" sh -c "cd $dir && apt-get ${apt[*]} download $pkg" >&2 ||
		die "apt-get download $pkg failed"
	chroot "$ROOT" sh -c "rm -rf $dir/x && dpkg -x $dir/${pkg}_*.deb $dir/x"
	ver=$(ls "$ROOT$dir/x/boot" | sed -n 's/^vmlinuz-//p')
	# bookworm's package has its modules under /lib, trixie's under /usr/lib
	mods=$(ls -d "$ROOT$dir"/x/{,usr/}lib/modules/"$ver" 2>/dev/null | head -1)
	[ -n "$ver" ] && [ -n "$mods" ] || die "no kernel in $pkg"
	cp "$ROOT$dir/x/boot/"* "$ROOT/boot/"
	rm -rf "$ROOT/usr/lib/modules/$ver"
	cp -a "$mods" "$ROOT/usr/lib/modules/"
	rm -rf "$ROOT$dir/x" "$ROOT$dir"/*.deb
	echo "$ver" >"$ROOT$dir/version"
	echo "$ver"
}

# What the guests run, copied into the root (its / is read-only there, /tmp private).
payload__copy() {
	local p=$ROOT/lwk
	rm -rf "$p"
	mkdir -p "$p/build/kernels" "$p/repo"
	cp "$OUT/loopwatch" "$p/build/"
	cp -a "$OUT/workloads" "$p/build/"
	cp "$OUT/kernels/storage_limit" "$p/build/kernels/"
	# the bench's programs, when built (make bench-kernels)
	if [ -x "$OUT/bench/syscost" ]; then
		mkdir -p "$p/build/bench"
		cp "$OUT/bench/syscost" "$OUT/bench/floor" "$p/build/bench/"
	fi
	cp -a "$REPO/tests" "$p/repo/"
	# the tests' helpers read the kernel's program counters with the bench's module
	mkdir -p "$p/repo/tools/bench"
	cp "$REPO"/tools/bench/*.py "$p/repo/tools/bench/"
	# test_prom checks its files with promtool, a static binary: the host's, if any
	if command -v promtool >/dev/null; then
		cp "$(command -v promtool)" "$ROOT/usr/local/bin/promtool"
	fi
}

root__make
mkdir -p "$OUT/kernels/logs"
versions=()
for suite in $KERNELS; do
	ver=$(kernel__fetch "$suite") || exit 1
	versions+=("$ver")
done
payload__copy
root__mount "$ROOT"

results=()
for i in "${!versions[@]}"; do
	ver=${versions[$i]}
	log=$OUT/kernels/logs/$ver.log
	say "booting $ver (${KERNELS// /, }: $((i + 1)) of ${#versions[@]})"
	start=$(date +%s)
	# through a pipe: QEMU reopens the guest's stdout and stderr by /proc/self/fd, and
	# two opens of one file truncate and overwrite each other
	# a guest that never comes up (or hangs) is cut off: its cases show "-". --verbose:
	# the guest kernel's console too, so that one that ends early says why (6.12 once
	# ended in its last case with no line; panic=-1 reboots, which ends vng)
	timeout --kill-after=30 "${KERNEL_TIMEOUT:-1200}" \
		chroot "$ROOT" vng --verbose -r "/boot/vmlinuz-$ver" --disable-kvm --memory 2G \
		--cpus 2 \
		--exec "env $KERNEL_ENV /lwk/repo/tests/kernels/guest.sh $KERNEL_CASES" 2>&1 |
		cat >"$log" || true
	secs=$(($(date +%s) - start))
	results+=("$ver|$secs|$log")
done
root__umount

# the bench prints its own tables: each guest's, one after the other
if [ "${KERNEL_CASES%% *}" = bench ]; then
	status=0
	for r in "${results[@]}"; do
		IFS='|' read -r ver secs log <<<"$r"
		printf '\n== %s (%ss) ==\n' "$ver" "$secs"
		sed -n '/^loopwatch: tracing/p; /^bench/,$p' "$log" | grep -v '^\[' || true
		grep -q '^bench done' "$log" || status=1
	done
	say "guest logs in $OUT/kernels/logs"
	exit $status
fi

# the table: a column per case, PASS/FAIL, or "-" when it never ran (or the boot
# failed); HOOKS what loopwatch chose there (its start line). A kernel older than
# loopwatch's minimum passes when loopwatch refused it in one line naming what is
# missing, and its cases are not run ("old").
status=0
printf '\n%-26s %6s %14s %-11s' KERNEL BOOT_S TASK_STORAGE_B HOOKS
for c in $KERNEL_CASES; do printf ' %-6s' "$c"; done
printf '\n'
refusals=()
for r in "${results[@]}"; do
	IFS='|' read -r ver secs log <<<"$r"
	# "+": never refused up to the search's bound
	limit=$(sed -n 's/^max_value_size \([0-9]*\) (not refused.*/\1+/p;
		s/^max_value_size \([0-9]*\) .*/\1/p' "$log" | head -1)
	hooks=$(sed -n 's/^loopwatch: tracing .*(hooks: \(fentry\|syscall tracepoints\).*/\1/p' \
		"$log" | head -1)
	refused=$(grep -m1 'needs Linux' "$log" || true)
	old=
	if [ "$(printf '%s\n%s\n' "$MIN_KERNEL" "${ver%%-*}" | sort -V | head -1)" != "$MIN_KERNEL" ]; then
		old=1
	fi
	[ -n "$refused" ] && hooks=refused
	[ "$hooks" = "syscall tracepoints" ] && hooks=tracepoints
	printf '%-26s %6s %14s %-11s' "$ver" "$secs" "${limit:--}" "${hooks:--}"
	for c in $KERNEL_CASES; do
		if [ -n "$old" ]; then
			if [ -n "$refused" ]; then
				printf ' %-6s' old
			else
				printf ' %-6s' FAIL
				status=1
			fi
		elif grep -q "^PASS kernel.$c " "$log"; then
			printf ' %-6s' PASS
		elif grep -q "^FAIL kernel.$c " "$log"; then
			printf ' %-6s' FAIL
			status=1
		else
			printf ' %-6s' -
			status=1
		fi
	done
	printf '\n'
	[ -n "$refused" ] && refusals+=("$ver: $refused")
done
for r in "${refusals[@]}"; do
	echo "$r"
done
say "guest logs in $OUT/kernels/logs"
exit $status
