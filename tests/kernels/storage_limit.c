// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The largest task storage value this kernel will create: a task storage
 * map per size, one update from userspace (it allocates the way
 * bpf_task_storage_get(..., F_CREATE) does). Since Linux 6.19 (f484f4a3e058)
 * the element comes from kmalloc_nolock(), which refuses more than
 * KMALLOC_MAX_CACHE_SIZE; before, any size the map accepted was created.
 * Prints "max_value_size N" (the search's upper bound if never refused).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#define HI 60000

/* 0: created; else the errno of the map's creation or of the update */
static int storage__try(int pidfd, __u32 size)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	struct btf *btf = btf__new_empty();
	int id_int, id_val, btf_fd, fd, err = 0;
	char *val = calloc(1, size);

	if (!btf || !val) {
		free(val);
		btf__free(btf);
		return ENOMEM;
	}
	id_int = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	id_val = btf__add_array(btf, id_int, btf__add_int(btf, "char", 1, 0), size);
	if (id_int < 0 || id_val < 0 || btf__load_into_kernel(btf)) {
		err = EINVAL;
		goto out;
	}
	btf_fd = btf__fd(btf);
	opts.btf_fd = btf_fd;
	opts.btf_key_type_id = id_int;
	opts.btf_value_type_id = id_val;
	fd = bpf_map_create(BPF_MAP_TYPE_TASK_STORAGE, "lw_limit", 4, size, 0, &opts);
	if (fd < 0) {
		err = errno;
		goto out;
	}
	if (bpf_map_update_elem(fd, &pidfd, val, BPF_ANY))
		err = errno;
	close(fd);
out:
	btf__free(btf);
	free(val);
	return err;
}

int main(void)
{
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	__u32 lo = 8, hi = HI;
	int err;

	if (pidfd < 0) {
		fprintf(stderr, "storage_limit: pidfd_open: %s\n", strerror(errno));
		return 1;
	}
	err = storage__try(pidfd, lo);
	if (err) {
		fprintf(stderr, "storage_limit: no task storage at all: %s\n", strerror(err));
		return 1;
	}
	if (!storage__try(pidfd, hi)) {
		printf("max_value_size %u (not refused up to it)\n", hi);
		return 0;
	}
	while (hi - lo > 1) {
		__u32 mid = lo + (hi - lo) / 2;

		if (storage__try(pidfd, mid))
			hi = mid;
		else
			lo = mid;
	}
	err = storage__try(pidfd, hi);
	printf("max_value_size %u (%u refused: %s)\n", lo, hi, strerror(err));
	return 0;
}
