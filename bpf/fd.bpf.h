/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a task's fd is, read from its fd table: the open file, its dentry
 * names, and for a socket who is on the other side. Shared by the wait-call
 * programs (is a wait's only fd a connected socket? is the loop's epoll fd
 * still open?) and the scheduler programs (what a blocking call waited on).
 */
#ifndef LOOPWATCH_FD_BPF_H
#define LOOPWATCH_FD_BPF_H

#include <bpf/bpf_endian.h>
#include "lw_abi.h"

/* uapi values, not in BTF */
#define LW_S_IFMT 0170000
#define LW_S_IFSOCK 0140000
#define LW_AF_UNIX 1
#define LW_AF_INET 2
#define LW_AF_INET6 10
#define LW_TCP_CLOSE 7
#define LW_TCP_LISTEN 10
#define LW_PIPEFS_MAGIC 0x50495045
#define LW_ANON_INODE_FS_MAGIC 0x09041934

static __always_inline struct file *fd__file(struct task_struct *task, __s64 fd)
{
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file *file = NULL;

	if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	bpf_probe_read_kernel(&file, sizeof(file), BPF_CORE_READ(fdt, fd) + fd);
	return file;
}

/* The socket behind file, for the families whose peer can be named; else NULL. */
static __always_inline struct sock *file__inet_or_unix_sock(struct file *file)
{
	struct socket *sock;
	struct sock *sk;
	__u16 family;

	if ((BPF_CORE_READ(file, f_inode, i_mode) & LW_S_IFMT) != LW_S_IFSOCK)
		return NULL;
	sock = (struct socket *)BPF_CORE_READ(file, private_data);
	sk = BPF_CORE_READ(sock, sk);
	if (!sk)
		return NULL;
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family != LW_AF_INET && family != LW_AF_INET6 && family != LW_AF_UNIX)
		return NULL;
	return sk;
}

/* Connected or connecting: neither listening nor closed (an unbound UDP socket). */
static __always_inline bool sock__has_peer(struct sock *sk)
{
	__u8 state = BPF_CORE_READ(sk, __sk_common.skc_state);

	return state != LW_TCP_LISTEN && state != LW_TCP_CLOSE;
}

static __always_inline void unix__name(struct sock *sk, struct lw_sock_peer *p)
{
	struct sock *other = BPF_CORE_READ((struct unix_sock *)sk, peer);
	struct unix_address *addr = NULL;
	int raw;
	__u32 len;

	/* the server's path is on the peer: a client socket is usually unnamed */
	if (other)
		addr = BPF_CORE_READ((struct unix_sock *)other, addr);
	p->local = !addr;
	if (!addr)
		addr = BPF_CORE_READ((struct unix_sock *)sk, addr);
	if (!addr)
		return;
	raw = BPF_CORE_READ(addr, len);
	if (raw <= (int)sizeof(__u16))	/* sun_family alone: unnamed */
		return;
	/* sun_path is 108 bytes: the mask only convinces the verifier */
	len = ((__u32)raw - sizeof(__u16)) & (LW_UNIX_PATH_LEN - 1);
	/* exactly len bytes: an abstract name holds NULs, and the name ends there */
	if (!bpf_probe_read_kernel(p->unix_path, len, &addr->name[0].sun_path))
		p->unix_len = len;
}

static __always_inline void sock__peer(struct sock *sk, struct lw_sock_peer *p)
{
	struct sock_common *c = &sk->__sk_common;
	__u16 family = BPF_CORE_READ(c, skc_family);

	__builtin_memset(p, 0, sizeof(*p));
	p->family = family;
	if (family == LW_AF_UNIX) {
		p->protocol = BPF_CORE_READ(sk, sk_type);
		unix__name(sk, p);
		return;
	}
	p->protocol = BPF_CORE_READ(sk, sk_protocol);
	p->port = bpf_ntohs(BPF_CORE_READ(c, skc_dport));
	if (family == LW_AF_INET) {
		__u32 daddr = BPF_CORE_READ(c, skc_daddr);

		if (!daddr && !p->port) {
			daddr = BPF_CORE_READ(c, skc_rcv_saddr);
			p->port = BPF_CORE_READ(c, skc_num);
			p->local = 1;
		}
		__builtin_memcpy(p->addr, &daddr, sizeof(daddr));
		return;
	}
	BPF_CORE_READ_INTO(&p->addr, c, skc_v6_daddr);
	if (!p->port) {
		BPF_CORE_READ_INTO(&p->addr, c, skc_v6_rcv_saddr);
		p->port = BPF_CORE_READ(c, skc_num);
		p->local = 1;
	}
}

/* The dentry names of file, leaf first. */
static __always_inline void file__names(struct file *file,
					char path[LW_PATH_PARTS][LW_PATH_PART_LEN])
{
	struct dentry *d = BPF_CORE_READ(file, f_path.dentry), *parent;

	for (int i = 0; i < LW_PATH_PARTS; i++) {
		/* the previous call's names must not show through a shorter path */
		path[i][0] = '\0';
		if (!d)
			continue;
		bpf_probe_read_kernel_str(path[i], LW_PATH_PART_LEN, BPF_CORE_READ(d, d_name.name));
		parent = BPF_CORE_READ(d, d_parent);
		d = parent == d ? NULL : parent;
	}
}

/* fd in task's table: a socket's peer, a pipe, a file's names, or nothing. */
static __always_inline void fd__info(struct task_struct *task, __s64 fd, struct lw_fd_info *out)
{
	struct file *file = fd__file(task, fd);
	struct sock *sk;
	unsigned long magic;

	out->kind = LW_FD_NONE;
	if (!file)
		return;
	sk = file__inet_or_unix_sock(file);
	if (sk) {
		out->kind = LW_FD_SOCKET;
		sock__peer(sk, &out->peer);
		return;
	}
	/* pipes and anon inodes (epoll, eventfd, timerfd) have no path: name them as /proc does */
	magic = BPF_CORE_READ(file, f_inode, i_sb, s_magic);
	out->kind = magic == LW_PIPEFS_MAGIC ? LW_FD_PIPE :
		    magic == LW_ANON_INODE_FS_MAGIC ? LW_FD_ANON : LW_FD_FILE;
	out->inode = BPF_CORE_READ(file, f_inode, i_ino);
	file__names(file, out->path);
}

#endif /* LOOPWATCH_FD_BPF_H */
