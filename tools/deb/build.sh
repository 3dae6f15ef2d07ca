#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tools/deb/build.sh: $OUT/loopwatch_VERSION_amd64.deb, a native Debian package of
# this tree built for the machine it runs on (`make deb`). Without debhelper: the
# binary is built afresh with Debian's hardening flags (dpkg-buildflags) into
# $OUT/deb/build, stripped as dh_strip does, its Depends computed by
# dpkg-shlibdeps from the libraries it links. Ships the binary, the systemd unit,
# the man page and, under /usr/share/doc/loopwatch/examples, the Prometheus alert
# rules, the Grafana dashboard and the Kubernetes DaemonSet. Prints the path.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(cd "${OUT:-$REPO/build}" 2>/dev/null && pwd || { mkdir -p "${OUT:-$REPO/build}" &&
	cd "${OUT:-$REPO/build}" && pwd; })
version=$(sed -n 's/^#define LOOPWATCH_VERSION "\(.*\)"$/\1/p' "$REPO/userspace/version.h")
arch=$(dpkg --print-architecture)
[ -n "$version" ] || { echo "tools/deb/build.sh: no LOOPWATCH_VERSION" >&2; exit 1; }
for tool in dpkg-buildflags dpkg-shlibdeps dpkg-deb; do
	command -v "$tool" >/dev/null ||
		{ echo "tools/deb/build.sh: needs $tool (dpkg-dev: tools/deps.sh test)" >&2; exit 1; }
done

build=$OUT/deb/build
stage=$OUT/deb/stage
deb=$OUT/loopwatch_${version}_${arch}.deb
# who built it: DEBFULLNAME and DEBEMAIL, as Debian's tools take them
maintainer="${DEBFULLNAME:-loopwatch developers} <${DEBEMAIL:-loopwatch@example.org}>"

# Debian's flags, all of its hardening (fortify, stack protector, relro, bindnow);
# the Makefile appends its own.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
# The link line takes CFLAGS alone, so the linker's flags ride along in it.
CFLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS) \
$(dpkg-buildflags --get LDFLAGS) -ffile-prefix-map=$REPO=." \
	make -C "$REPO" --no-print-directory OUT="$build" "$build/loopwatch" >&2

rm -rf --one-file-system "$stage"
doc=$stage/usr/share/doc/loopwatch
install -D -m 0755 "$build/loopwatch" "$stage/usr/sbin/loopwatch"
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
	"$stage/usr/sbin/loopwatch"
install -d -m 0755 "$stage/lib/systemd/system"
sed 's|/usr/local/sbin/loopwatch|/usr/sbin/loopwatch|' "$REPO/tools/systemd/loopwatch.service" \
	>"$stage/lib/systemd/system/loopwatch.service"
chmod 0644 "$stage/lib/systemd/system/loopwatch.service"
install -D -m 0644 "$REPO/tools/loopwatch.8" "$stage/usr/share/man/man8/loopwatch.8"
gzip -9n "$stage/usr/share/man/man8/loopwatch.8"
install -d -m 0755 "$doc/examples"
for f in tools/prometheus/loopwatch.rules.yml tools/prometheus/loopwatch.rules.test.yml \
	tools/grafana/loopwatch.json tools/deploy/daemonset.yaml tools/deploy/namespace.yaml \
	tools/deploy/service.yaml tools/deploy/kustomization.yaml; do
	install -m 0644 "$REPO/$f" "$doc/examples/"
done
install -m 0644 "$REPO/docs/telemetry.md" "$doc/"
install -m 0644 "$REPO/tools/deb/copyright" "$doc/copyright"
date=$(git -C "$REPO" log -1 --format=%cD 2>/dev/null || date -R)
printf 'loopwatch (%s) unstable; urgency=medium\n\n  * Built from %s.\n\n -- %s  %s\n' \
	"$version" "$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo "a tarball")" \
	"$maintainer" "$date" | gzip -9n >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

# Depends from the libraries the binary links, as dpkg-shlibdeps finds their packages
shlibs=$OUT/deb/shlibs
rm -rf "$shlibs" && mkdir -p "$shlibs/debian"
printf 'Source: loopwatch\n\nPackage: loopwatch\nArchitecture: any\n' >"$shlibs/debian/control"
depends=$(cd "$shlibs" && dpkg-shlibdeps -O -e"$stage/usr/sbin/loopwatch" 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "tools/deb/build.sh: dpkg-shlibdeps found no Depends" >&2; exit 1; }

install -d -m 0755 "$stage/DEBIAN"
cat >"$stage/DEBIAN/control" <<CONTROL
Package: loopwatch
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $depends
Section: admin
Priority: optional
Description: find what blocks event loops, from outside the process, with eBPF
 loopwatch traces the wait calls of every thread on the machine with BPF
 programs and reports, for every event loop (Node.js, Python asyncio,
 libuv, epoll servers), its lag percentiles and each stall with what caused
 it: time on CPU, asleep in a blocking call, or waiting for a CPU, with the
 stacks (native, Python and JavaScript frames) that name the culprit.
 .
 Outputs: a live view, JSON lines, Prometheus metrics (textfile and an HTTP
 endpoint, native histograms), OTLP, pprof profiles, folded stacks, Chrome
 traces and a Markdown diagnosis.
CONTROL
(cd "$stage" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z |
	xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"
find "$stage" -type d -exec chmod 0755 {} +
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >&2
echo "$deb"
