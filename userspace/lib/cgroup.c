// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <string.h>
#include "lib/cgroup.h"

static bool char__is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool cgroup__container_id(const char *path, char *id, size_t len)
{
	const char *found = NULL, *s = path;

	/*
	 * docker-ID.scope, /docker/ID, cri-containerd-ID.scope, crio-ID.scope,
	 * libpod-ID.scope: a run of exactly 64 hex digits after '/', '-' or ':'.
	 * The last one wins: nested cgroups name the innermost container.
	 */
	while (*s) {
		size_t n = 0;

		while (char__is_hex(s[n]))
			n++;
		if (n == 64 && s > path && strchr("/-:", s[-1]))
			found = s;
		s += n ? n : 1;
	}
	if (!found || len < CGROUP_ID_LEN)
		return false;
	memcpy(id, found, 64);
	id[64] = '\0';
	return true;
}

bool k8s__valid_name(const char *s, size_t n, size_t max)
{
	if (!n || n >= max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
			return false;
	}
	return true;
}

/* 8-4-4-4-12 hex digits, '-' or '_' (the systemd driver escapes '-') between: dashes out */
static bool uid__parse(const char *s, size_t n, char *out)
{
	static const size_t dash_at[] = { 8, 13, 18, 23 };
	size_t d = 0;

	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (d < 4 && i == dash_at[d]) {
			if (s[i] != '-' && s[i] != '_')
				return false;
			out[i] = '-';
			d++;
		} else if (char__is_hex(s[i])) {
			out[i] = s[i];
		} else {
			return false;
		}
	}
	out[n] = '\0';
	return true;
}

/* A pod's component: kubepods-burstable-pod<uid>.slice or pod<uid>. */
static bool component__pod_uid(const char *c, size_t n, char *out)
{
	const char *p = NULL;

	if (n > 6 && !memcmp(c + n - 6, ".slice", 6))
		n -= 6;
	for (size_t i = 0; i + 3 <= n; i++) {
		if (!memcmp(c + i, "pod", 3) && (i == 0 || c[i - 1] == '-'))
			p = c + i + 3;
	}
	return p && uid__parse(p, n - (size_t)(p - c), out);
}

static bool component__is_unit(const char *c, size_t n)
{
	return (n > 8 && !memcmp(c + n - 8, ".service", 8)) ||
	       (n > 6 && !memcmp(c + n - 6, ".scope", 6));
}

bool cgroup__identity(const char *path, struct cgroup_identity *id)
{
	bool kubepods = false;

	memset(id, 0, sizeof(*id));
	if (!path)
		return false;
	for (const char *c = path; *c; ) {
		size_t n = strcspn(c, "/");

		/* kind's nodes nest the kubelet's slice: kubelet-kubepods-….slice */
		if ((n >= 8 && !memcmp(c, "kubepods", 8)) ||
		    (n >= 16 && !memcmp(c, "kubelet-kubepods", 16)))
			kubepods = true;
		if (kubepods && n)
			component__pod_uid(c, n, id->pod_uid);
		if (component__is_unit(c, n) && n < sizeof(id->unit)) {
			memcpy(id->unit, c, n);
			id->unit[n] = '\0';
		}
		c += n;
		if (*c == '/')
			c++;
	}
	cgroup__container_id(path, id->container_id, sizeof(id->container_id));
	if (id->pod_uid[0])
		id->kind = CGROUP_K8S;
	else if (id->container_id[0])
		id->kind = CGROUP_CONTAINER;
	else if (id->unit[0])
		id->kind = CGROUP_SYSTEMD;
	/* a container's scope is the runtime's, not a service of the host */
	if (id->kind != CGROUP_SYSTEMD)
		id->unit[0] = '\0';
	return id->kind != CGROUP_NONE;
}

void cgroup__service(const struct cgroup_identity *id, const struct k8s_names *k8s, char *buf,
		     size_t len)
{
	if (!len)
		return;
	buf[0] = '\0';
	switch (id->kind) {
	case CGROUP_K8S:
		if (k8s && k8s->ns[0] && k8s->container[0])
			snprintf(buf, len, "%s/%s", k8s->ns, k8s->container);
		else
			snprintf(buf, len, "%s", id->pod_uid);
		break;
	case CGROUP_CONTAINER:
		snprintf(buf, len, "container-%.12s", id->container_id);
		break;
	case CGROUP_SYSTEMD:
		snprintf(buf, len, "%s", id->unit);
		break;
	case CGROUP_NONE:
		break;
	}
}
