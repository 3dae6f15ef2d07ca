#!/usr/bin/env bash
# Installs exactly the Debian packages loopwatch needs to build and test.
# Idempotent: installs only what is missing. Usage: tools/deps.sh [build|test]
set -euo pipefail

build_pkgs=(clang make gcc bpftool libbpf-dev libelf-dev zlib1g-dev libncurses-dev)
# runtimes and libraries the end-to-end tests trace
test_pkgs=(python3 python3-tornado python3-aiohttp python3-uvloop python3-ujson nodejs prometheus
	prometheus-node-exporter libjson-c-dev libjansson-dev libcjson-dev
	python3.11-dbg)

want=("${build_pkgs[@]}")
[ "${1:-build}" = test ] && want+=("${test_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "tools/deps.sh: missing packages: ${missing[*]} (run as root to install)" >&2
	exit 1
fi
echo "tools/deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
