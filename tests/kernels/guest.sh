#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Inside a test-kernels guest (tests/kernels/run.sh): the kernel, the largest task
# storage value it creates, then the core cases named in the arguments (core.py).
echo "kernel $(uname -r)"
/lwk/build/kernels/storage_limit 2>&1
cd /tmp && exec python3 /lwk/repo/tests/kernels/core.py /lwk/build "$@" 2>&1
