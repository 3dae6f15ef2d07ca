// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "kernel/uprobes.h"

/*
 * BPF_LINK_CREATE for a uprobe_multi link (UAPI linux/bpf.h, kernel 6.6+),
 * which this system's headers and libbpf (1.1) do not know yet.
 */
#define UPROBE_MULTI_RETURN 1U		/* BPF_F_UPROBE_MULTI_RETURN */

struct uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__aligned_u64 path;
	__aligned_u64 offsets;
	__aligned_u64 ref_ctr_offsets;
	__aligned_u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 pad;
};

struct uprobe_links {
	int multi[2];			/* entry, return; -1 for single links */
	struct bpf_link **single;	/* per function: entry, return */
	size_t n;			/* functions probed */
	size_t nsingle;			/* of single, slots in use */
};

bool uprobes__kernel_has_multi(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool has;

	if (!btf)
		return false;
	has = btf__find_by_name_kind(btf, "bpf_uprobe_multi_link", BTF_KIND_STRUCT) >= 0;
	btf__free(btf);
	return has;
}

/* One uprobe_multi link: an fd, or -errno. */
static int multi__link(int prog_fd, int pid, const char *path, const uint64_t *offs,
		       const __u64 *cookies, size_t n, bool ret)
{
	struct uprobe_multi_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (__u32)prog_fd;
	attr.attach_type = UPROBES_MULTI_ATTACH_TYPE;
	attr.path = (__u64)(unsigned long)path;
	attr.offsets = (__u64)(unsigned long)offs;
	attr.cookies = (__u64)(unsigned long)cookies;
	attr.cnt = (__u32)n;
	attr.multi_flags = ret ? UPROBE_MULTI_RETURN : 0;
	attr.pid = pid > 0 ? (__u32)pid : 0;
	fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

static int links__multi(struct uprobe_links *l, const struct uprobe_progs *progs, int pid,
			const char *path, const uint64_t *offs, const __u32 *cookies, size_t n)
{
	__u64 *c64 = calloc(n, sizeof(*c64));
	int fd;

	if (!c64)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		c64[i] = cookies[i];
	fd = multi__link(progs->entry_multi, pid, path, offs, c64, n, false);
	if (fd >= 0) {
		l->multi[0] = fd;
		fd = multi__link(progs->ret_multi, pid, path, offs, c64, n, true);
		if (fd >= 0)
			l->multi[1] = fd;
	}
	free(c64);
	if (fd < 0)
		return fd;
	l->n = n;
	return 0;
}

/* A link per function and way, as many functions as max_fds lets (libbpf: 2 fds a link). */
static int links__single(struct uprobe_links *l, const struct uprobe_progs *progs, int pid,
			 const char *path, const uint64_t *offs, const __u32 *cookies, size_t n,
			 size_t max_fds)
{
	int err = -ENOENT;

	l->single = calloc(2 * n, sizeof(*l->single));
	if (!l->single)
		return -ENOMEM;
	for (size_t i = 0; i < n && uprobe_links__fds(l) + 4 <= max_fds; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookies[i]);
		struct bpf_link *entry, *ret = NULL;

		entry = bpf_program__attach_uprobe_opts(progs->entry, pid, path, offs[i], &opts);
		if (entry) {
			opts.retprobe = true;
			ret = bpf_program__attach_uprobe_opts(progs->ret, pid, path, offs[i], &opts);
		}
		if (!ret) {
			err = -errno;
			bpf_link__destroy(entry);
			continue;
		}
		l->single[l->nsingle++] = entry;
		l->single[l->nsingle++] = ret;
		l->n++;
	}
	return l->n ? 0 : err;
}

struct uprobe_links *uprobe_links__attach(const struct uprobe_progs *progs, int pid,
					  const char *path, const uint64_t *offs,
					  const __u32 *cookies, size_t n, size_t max_fds, int *err)
{
	struct uprobe_links *l = calloc(1, sizeof(*l));
	int ret;

	if (!l) {
		*err = -ENOMEM;
		return NULL;
	}
	l->multi[0] = l->multi[1] = -1;
	if (progs->entry_multi >= 0)
		ret = max_fds >= 2 ? links__multi(l, progs, pid, path, offs, cookies, n) : -ENOSPC;
	else
		ret = links__single(l, progs, pid, path, offs, cookies, n, max_fds);
	if (ret) {
		uprobe_links__destroy(l);
		*err = ret;
		return NULL;
	}
	return l;
}

size_t uprobe_links__functions(const struct uprobe_links *l)
{
	return l ? l->n : 0;
}

size_t uprobe_links__fds(const struct uprobe_links *l)
{
	if (!l)
		return 0;
	return (l->multi[0] >= 0) + (l->multi[1] >= 0) + 2 * l->nsingle;
}

size_t uprobe_links__fds_for(const struct uprobe_progs *progs, size_t n)
{
	return progs->entry_multi >= 0 ? 2 : 4 * n;
}

void uprobe_links__destroy(struct uprobe_links *l)
{
	if (!l)
		return;
	for (int i = 0; i < 2; i++) {
		if (l->multi[i] >= 0)
			close(l->multi[i]);
	}
	for (size_t i = 0; i < l->nsingle; i++)
		bpf_link__destroy(l->single[i]);
	free(l->single);
	free(l);
}
