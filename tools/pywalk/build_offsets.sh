#!/bin/sh
# Build and run offsets.c against each installed CPython's headers.
cd "$(dirname "$0")"
for v in 3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0; do
  inc=$HOME/.pyenv/versions/$v/include/python${v%.*}
  gcc -std=gnu11 -w -DPy_BUILD_CORE -I"$inc" -I"$inc/internal" offsets.c -o offsets_$v && ./offsets_$v > offsets_$v.txt; rm -f offsets_$v
done
# Debian python3.11 (3.11.2): headers from python3.11-dev
gcc -std=gnu11 -w -DPy_BUILD_CORE -I/usr/include/python3.11 -I/usr/include/python3.11/internal -I/usr/include/x86_64-linux-gnu/python3.11 offsets.c -o offsets_deb3.11.2 && ./offsets_deb3.11.2 > offsets_deb3.11.2.txt; rm -f offsets_deb3.11.2
