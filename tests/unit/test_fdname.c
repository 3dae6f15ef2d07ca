// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Naming a blocking call's fd from what BPF read at its first sleep: socket
 * peers, pipes, anon inodes, dentry names. The bytes come from traced
 * processes (a unix socket's path is anybody's): random records must give a
 * terminated, printable name.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "check.h"
#include "events/decode.h"

static const char *name_of(const struct lw_fd_info *fd)
{
	static char buf[256];

	fd_info__format(fd, buf, sizeof(buf));
	return buf;
}

static struct lw_fd_info inet(int family, int protocol, const char *addr, int port, int local)
{
	struct lw_fd_info fd = { .kind = LW_FD_SOCKET };

	fd.peer.family = family;
	fd.peer.protocol = protocol;
	fd.peer.port = port;
	fd.peer.local = local;
	inet_pton(family, addr, fd.peer.addr);
	return fd;
}

static struct lw_fd_info unix_sock(const char *path, size_t len, int local)
{
	struct lw_fd_info fd = { .kind = LW_FD_SOCKET };

	fd.peer.family = AF_UNIX;
	fd.peer.local = local;
	fd.peer.unix_len = len;
	memcpy(fd.peer.unix_path, path, len);
	return fd;
}

static void expect(struct lw_fd_info fd, const char *want)
{
	const char *got = name_of(&fd);

	CHECK(!strcmp(got, want), "got '%s', want '%s'", got, want);
}

static void test_peers(void)
{
	const char *got;
	struct lw_fd_info fd;

	expect(inet(AF_INET, IPPROTO_TCP, "10.0.0.5", 5432, 0), "tcp 10.0.0.5:5432");
	expect(inet(AF_INET, IPPROTO_UDP, "127.0.0.53", 53, 0), "udp 127.0.0.53:53");
	expect(inet(AF_INET6, IPPROTO_TCP, "::1", 8080, 0), "tcp [::1]:8080");
	expect(inet(AF_INET, IPPROTO_TCP, "0.0.0.0", 8080, 1), "tcp 0.0.0.0:8080 (local)");
	expect(inet(AF_INET, IPPROTO_ICMP, "10.0.0.1", 0, 0), "ip proto 1 10.0.0.1:0");
	expect(unix_sock("/run/x.sock", 12, 0), "unix /run/x.sock");
	expect(unix_sock("\0abstract", 9, 0), "unix @abstract");
	expect(unix_sock("", 0, 1), "unix");	/* a socketpair */
	fd = unix_sock("/srv/a\x1b]0;x\a.sock", 17, 1);
	got = name_of(&fd);
	CHECK(!strchr(got, '\x1b') && !strchr(got, '\a') && strstr(got, "(local)"), "%s", got);
}

static void test_files(void)
{
	struct lw_fd_info fd = { .kind = LW_FD_PIPE, .inode = 177844 };

	expect(fd, "pipe:[177844]");
	memset(&fd, 0, sizeof(fd));
	fd.kind = LW_FD_ANON;
	strcpy(fd.path[0], "[eventpoll]");
	expect(fd, "anon_inode:[eventpoll]");
	memset(&fd, 0, sizeof(fd));
	fd.kind = LW_FD_FILE;
	strcpy(fd.path[0], "x.dat");
	strcpy(fd.path[1], "tmp");
	strcpy(fd.path[2], "/");
	expect(fd, "/tmp/x.dat");
	memset(&fd, 0, sizeof(fd));
	expect(fd, "");	/* no file at that number */
}

/* Anything a traced process or a stale record can put there: never unterminated or raw. */
static void test_random_records(void)
{
	struct lw_fd_info fd;
	unsigned char *bytes = (unsigned char *)&fd;
	int bad = 0;

	srand(2463534242u);
	for (int i = 0; i < 200000; i++) {
		char buf[64];

		for (size_t j = 0; j < sizeof(fd); j++)
			bytes[j] = (unsigned char)rand();
		fd.kind = (__u32)(rand() % 6);
		memset(buf, 'Z', sizeof(buf));
		fd_info__format(&fd, buf, sizeof(buf));
		if (!memchr(buf, '\0', sizeof(buf))) {
			bad++;
			continue;
		}
		for (const char *c = buf; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				bad++;
	}
	CHECK(bad == 0, "%d unterminated or control bytes", bad);
}

int main(void)
{
	test_peers();
	test_files();
	test_random_records();
	return check__report();
}
