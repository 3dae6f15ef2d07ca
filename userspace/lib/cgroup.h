/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Service identity from a cgroup path alone: the systemd unit, the
 * container, the Kubernetes pod. Pure string work on a path a traced process
 * cannot choose freely (only root moves processes between cgroups), still
 * parsed as untrusted: bounded, every output validated.
 *
 * Precedence (the first that matches names the service):
 *  1. Kubernetes: a component starting with "kubepods" (or
 *     "kubelet-kubepods": kind nests the kubelet's slices) and a pod component
 *     (systemd driver: kubepods-burstable-pod<uid with _>.slice; cgroupfs
 *     driver: pod<uid>) give pod_uid; the innermost 64-hex container id gives
 *     container_id.
 *  2. A container outside Kubernetes (docker-ID.scope, /docker/ID,
 *     cri-containerd-ID.scope, crio-ID.scope, libpod-ID.scope): container_id.
 *  3. systemd: the innermost component ending in .service or .scope
 *     (nginx.service, run-r1b2.scope, session-3.scope).
 *  4. Nothing: no service label; the cgroup path stays the only hint.
 */
#ifndef LOOPWATCH_LIB_CGROUP_H
#define LOOPWATCH_LIB_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

#define CGROUP_ID_LEN 65	/* 64 hex digits and the NUL */
#define CGROUP_UID_LEN 37	/* 8-4-4-4-12 and the NUL */
#define CGROUP_UNIT_LEN 256

enum cgroup_kind { CGROUP_NONE, CGROUP_SYSTEMD, CGROUP_CONTAINER, CGROUP_K8S };

struct cgroup_identity {
	enum cgroup_kind kind;
	char unit[CGROUP_UNIT_LEN];		/* systemd unit; "" if none */
	char container_id[CGROUP_ID_LEN];	/* "" if none */
	char pod_uid[CGROUP_UID_LEN];		/* "" if none */
};

/* Kubernetes names of a pod's container, as kubelet's files give them. */
#define K8S_NAME_LEN 254	/* a DNS subdomain: 253 characters */
struct k8s_names {
	char ns[64];
	char pod[K8S_NAME_LEN];
	char container[64];
};

/* Always fills id (kind CGROUP_NONE when nothing matched); returns id->kind != NONE. */
bool cgroup__identity(const char *path, struct cgroup_identity *id);
/*
 * The service a process belongs to, by the precedence above: a Kubernetes
 * container is namespace/container when the kubelet's files name it (k8s may
 * be NULL), else its pod's uid; another container "container-" and its short
 * id; a systemd unit its name. "" when nothing names one. Every output that
 * labels a service names it so.
 */
#define CGROUP_SERVICE_LEN CGROUP_UNIT_LEN
void cgroup__service(const struct cgroup_identity *id, const struct k8s_names *k8s, char *buf,
		     size_t len);
/* Container id (64 hex digits) in a docker/containerd/cri-o/podman cgroup path. */
bool cgroup__container_id(const char *path, char *id, size_t len);
/* A Kubernetes name (lowercase alphanumerics, '-' and '.'), 1..max-1 long. */
bool k8s__valid_name(const char *s, size_t n, size_t max);

#endif
