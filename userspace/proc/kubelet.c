// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "lib/clock.h"
#include "proc/kubelet.h"

/* a node runs at most a few hundred pods: past this many entries the directory is not kubelet's */
#define KUBELET_MAX_ENTRIES 65536

static bool name__copy(char *dst, size_t max, const char *s, size_t n)
{
	if (!k8s__valid_name(s, n, max))
		return false;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return true;
}

/* POD_NAMESPACE_CONTAINER-ID.log */
static bool containers__entry(const char *name, const char *id, struct k8s_names *out)
{
	size_t n = strlen(name), idn = strlen(id);
	const char *u1, *u2;

	if (n < idn + 6 || strcmp(name + n - 4, ".log") || name[n - 5 - idn] != '-' ||
	    memcmp(name + n - 4 - idn, id, idn))
		return false;
	n -= idn + 5;
	u1 = memchr(name, '_', n);
	u2 = u1 ? memchr(u1 + 1, '_', n - (size_t)(u1 + 1 - name)) : NULL;
	if (!u2)
		return false;
	return name__copy(out->pod, sizeof(out->pod), name, (size_t)(u1 - name)) &&
	       name__copy(out->ns, sizeof(out->ns), u1 + 1, (size_t)(u2 - u1 - 1)) &&
	       name__copy(out->container, sizeof(out->container), u2 + 1,
			  n - (size_t)(u2 + 1 - name));
}

/* NAMESPACE_POD_UID */
static bool pods__entry(const char *name, const char *uid, struct k8s_names *out)
{
	size_t n = strlen(name), un = strlen(uid);
	const char *u1;

	if (n < un + 4 || name[n - un - 1] != '_' || strcmp(name + n - un, uid))
		return false;
	n -= un + 1;
	u1 = memchr(name, '_', n);
	if (!u1)
		return false;
	return name__copy(out->ns, sizeof(out->ns), name, (size_t)(u1 - name)) &&
	       name__copy(out->pod, sizeof(out->pod), u1 + 1, n - (size_t)(u1 + 1 - name));
}

static bool dir__find(const char *dir, const char *sub, const char *key,
		      bool (*match)(const char *, const char *, struct k8s_names *),
		      struct k8s_names *out)
{
	char path[4096];
	struct dirent *e;
	bool found = false;
	size_t seen = 0;
	DIR *d;
	int fd;

	if (!*key || snprintf(path, sizeof(path), "%s/%s", dir, sub) >= (int)sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	while (!found && seen++ < KUBELET_MAX_ENTRIES && (e = readdir(d))) {
		struct k8s_names n = {};

		if (match(e->d_name, key, &n)) {
			*out = n;
			found = true;
		}
	}
	closedir(d);
	return found;
}

bool kubelet__names(const char *log_dir, const char *pod_uid, const char *container_id,
		    struct k8s_names *out)
{
	struct k8s_names pod = {};

	memset(out, 0, sizeof(*out));
	if (!log_dir || !*log_dir)
		return false;
	/* the container's own file names all three; the pod's directory only two */
	if (dir__find(log_dir, "containers", container_id, containers__entry, out))
		return true;
	if (!dir__find(log_dir, "pods", pod_uid, pods__entry, &pod))
		return false;
	*out = pod;
	return true;
}

struct kubelet_entry {
	char pod_uid[CGROUP_UID_LEN];
	char container_id[CGROUP_ID_LEN];
	struct k8s_names names;
	bool found;
	double asked_s;		/* monotonic */
};

struct kubelet_cache {
	const char *log_dir;
	struct kubelet_entry v[KUBELET_CACHE_MAX];
	size_t n;
	size_t next;		/* the slot replaced next once full */
	unsigned long reads;
};

struct kubelet_cache *kubelet_cache__new(const char *log_dir)
{
	struct kubelet_cache *c = calloc(1, sizeof(*c));

	if (c)
		c->log_dir = log_dir;
	return c;
}

void kubelet_cache__free(struct kubelet_cache *c)
{
	free(c);
}

unsigned long kubelet_cache__reads(const struct kubelet_cache *c)
{
	return c->reads;
}

static struct kubelet_entry *cache__find(struct kubelet_cache *c, const char *pod_uid,
					 const char *container_id)
{
	for (size_t i = 0; i < c->n; i++) {
		struct kubelet_entry *e = &c->v[i];

		if (!strcmp(e->pod_uid, pod_uid) && !strcmp(e->container_id, container_id))
			return e;
	}
	return NULL;
}

bool kubelet_cache__names(struct kubelet_cache *c, const char *pod_uid,
			  const char *container_id, struct k8s_names *out)
{
	struct kubelet_entry *e = cache__find(c, pod_uid, container_id);
	double now = clock__mono();

	if (e && (e->names.container[0] || now - e->asked_s < KUBELET_RETRY_S)) {
		*out = e->names;
		return e->found;
	}
	if (!e) {
		if (strlen(pod_uid) >= sizeof(e->pod_uid) ||
		    strlen(container_id) >= sizeof(e->container_id))
			return kubelet__names(c->log_dir, pod_uid, container_id, out);
		if (c->n < KUBELET_CACHE_MAX) {
			e = &c->v[c->n++];
		} else {
			e = &c->v[c->next];
			c->next = (c->next + 1) % KUBELET_CACHE_MAX;
		}
		snprintf(e->pod_uid, sizeof(e->pod_uid), "%s", pod_uid);
		snprintf(e->container_id, sizeof(e->container_id), "%s", container_id);
	}
	c->reads++;
	e->found = kubelet__names(c->log_dir, pod_uid, container_id, &e->names);
	e->asked_s = now;
	*out = e->names;
	return e->found;
}
