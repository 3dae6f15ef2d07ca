// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include "kernel/system.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int caps__effective(__u64 *caps)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	*caps = (__u64)data[0].effective | ((__u64)data[1].effective << 32);
	return 0;
}

static int cap__has(__u64 caps, int cap)
{
	return (caps >> cap) & 1;
}

int system__check_privileges(char *err, size_t errlen)
{
	__u64 caps = 0;

	if (caps__effective(&caps)) {
		snprintf(err, errlen, "cannot read capabilities: %s", strerror(errno));
		return -1;
	}
	/* CAP_SYS_ADMIN stands in for both on kernels that predate the split */
	if (cap__has(caps, CAP_SYS_ADMIN))
		return 0;
	if (!cap__has(caps, CAP_BPF)) {
		snprintf(err, errlen, "missing privilege: CAP_BPF (run as root)");
		return -1;
	}
	if (!cap__has(caps, CAP_PERFMON)) {
		snprintf(err, errlen, "missing privilege: CAP_PERFMON (run as root)");
		return -1;
	}
	return 0;
}

int system__check_btf(char *err, size_t errlen)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(err, errlen, "no kernel BTF: /sys/kernel/btf/vmlinux: %s "
			 "(needs a kernel built with CONFIG_DEBUG_INFO_BTF)", strerror(errno));
		return -1;
	}
	return 0;
}

int tracefs__ensure(void)
{
	struct stat st;

	if (!stat("/sys/kernel/tracing/events", &st))
		return 0;
	if (!stat("/sys/kernel/debug/tracing/events", &st))
		return 0;
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) && errno != EBUSY)
		return -errno;
	return 0;
}
